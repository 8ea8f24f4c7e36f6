/**
 * createGuard(): the core's conductor on the page over a scorer that lives in a worker. Validation,
 * planning, the deadline, the failure policy, judging and `defend` (with the caller's `regenerate` and
 * `sanitize`) run here, once; only load, score, cancel, ping and dispose cross to the worker
 * (wire/scorer-client.ts), and log-probs and attention rows come back as transferables.
 *
 * A worker that dies (its error or exit event, a silent one past the heartbeat, a lost GPU device or
 * exhausted memory) is replaced on the next request, and every request it held goes once more to the new
 * one; a request whose second worker dies too fails with WorkerCrashedError, which the conductor answers
 * with the failure policy. A worker that does not stop a cancelled request within `stuckWorkerGraceMs` (a
 * wedged WebGPU or wasm run that never reads the cancel) is terminated and replaced the same way.
 */
import { createConductor, type LocalGuard } from '../core/conductor.js';
import { InvalidOptionsError, WorkerCrashedError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { GuardOptions } from '../core/options.js';
import { splitRuntimeOptions, type ModelRuntimeOptions } from '../core/runtime-options.js';
import { DEFAULT_STUCK_GRACE_MS, validateFactoryOptions } from '../core/shell-options.js';
import { workerLink, type WorkerLike } from '../wire/endpoint.js';
import { heartbeatOptions } from '../wire/heartbeat.js';
import { createRemoteScorer, type ScorerLink } from '../wire/scorer-client.js';
import type { ModelLocation, WorkerLoad } from '../wire/protocol.js';
import { CLIENT_OPTIONS, type ClientShellOptions } from './options.js';

export type { WorkerLike } from '../wire/endpoint.js';

/** Options of {@link createGuard}: the guard's options, the runtime options (shared with createNodeGuard), and where the worker and the model are. */
export interface CreateGuardOptions extends GuardOptions, ModelRuntimeOptions, ClientShellOptions {}

/** The options createGuard keeps on the page side; everything else is the guard's or the runtime's. */
const CLIENT_OPTION_KEYS = Object.keys(CLIENT_OPTIONS.entries) as Array<keyof ClientShellOptions>;

/** The embedded model's path under the app's public root. */
export const DEFAULT_MODEL_URL = 'models/edgearmor-proxy/';

// Above a first wasm check on the embedded model in a slow worker, so only a dead worker misses it.
const HEARTBEAT_TIMEOUT_MS = 15_000;

/** A guard whose model runs in a worker: the same conductor, and so the same interface, as the in-process guard. */
export type WorkerGuard = LocalGuard;

function defaultWorker(): WorkerLike {
  if (typeof Worker === 'undefined') {
    throw new InvalidOptionsError(
      'createGuard: there is no global Worker here; pass options.worker (e.g. () => new Worker(url) from node:worker_threads), or use createNodeGuard for an in-process guard.',
      { option: 'worker' },
    );
  }
  // Resolves to dist/worker.js in the published package; apps that bundle the sources pass their own.
  return new Worker(new URL('../worker.js', import.meta.url), { type: 'module' });
}

function modelLocation(options: CreateGuardOptions): ModelLocation {
  if (options.modelDir !== undefined) return { dir: options.modelDir };
  const url = options.modelUrl ?? DEFAULT_MODEL_URL;
  // Resolve here: inside the worker a relative URL would resolve against the worker script instead of the page.
  const base = (globalThis as { location?: { href: string } }).location?.href;
  try {
    return { baseUrl: new URL(url, base).href };
  } catch {
    throw new InvalidOptionsError(`Invalid option modelUrl: received ${JSON.stringify(url)}; allowed: an absolute URL, or a relative one in a page.`, { option: 'modelUrl' });
  }
}

function singleUse(instance: WorkerLike): () => WorkerLike {
  let used = false;
  return () => {
    if (used) throw new WorkerCrashedError('The worker crashed and cannot be restarted: createGuard was given a Worker instance; pass a factory (() => new Worker(...)) to allow restarts.');
    used = true;
    return instance;
  };
}

/** Creates a guard whose conductor runs here and whose scorer runs in a worker. */
export function createGuard(options: CreateGuardOptions = {}): WorkerGuard {
  validateFactoryOptions(CLIENT_OPTIONS, options as Record<string, unknown>);
  const { worker, onProgress, stuckWorkerGraceMs, heartbeatTimeoutMs } = options;
  const { guard: guardOptions, runtime } = splitRuntimeOptions(options, CLIENT_OPTION_KEYS);
  const { modelManifest, ...runtimeOptions } = runtime;
  // Plain data, valid as it is: the worker plans its backends and loads, and validates nothing again.
  const load: WorkerLoad = { model: modelLocation(options), runtime: runtimeOptions, backend: options.backend ?? 'auto', ...(modelManifest ? { modelManifest } : {}) };
  // Fails here, not in the worker, when an option cannot cross (a function, a cycle).
  structuredClone(load);
  const makeWorker: () => WorkerLike = typeof worker === 'function' ? worker : worker !== undefined ? singleUse(worker) : defaultWorker;
  const heartbeat = heartbeatOptions(heartbeatTimeoutMs, HEARTBEAT_TIMEOUT_MS);
  const start = (): ScorerLink => {
    const instance = makeWorker();
    // Node worker_threads report their exit, and a wasm run there holds the thread for seconds, so only browser
    // Workers (which can die without an event) get the heartbeat unless heartbeatTimeoutMs is set.
    const isNodeWorker = typeof (instance as { on?: unknown }).on === 'function';
    return { ...workerLink(instance), silentDeath: heartbeatTimeoutMs !== undefined || !isNodeWorker };
  };
  const remote = createRemoteScorer<WorkerLoad>({
    start,
    load,
    hostName: 'guard worker',
    cancelGraceMs: stuckWorkerGraceMs ?? DEFAULT_STUCK_GRACE_MS,
    resendOnDeath: true,
    heartbeat,
    ...(onProgress ? { onProgress: (event: GuardProgress) => onProgress(event) } : {}),
  });
  return createConductor(guardOptions, { load: remote.load, dispose: remote.dispose, ...(onProgress ? { onProgress } : {}) });
}
