/**
 * createGuard(): the Guard interface backed by a worker. The model runs in the worker; the caller's
 * `regenerate` and `sanitize` callbacks stay on this side (defense runs here, scoring crosses).
 *
 * Every call races the worker's answer against the caller's signal, `timeoutMs`, `dispose()` and a
 * worker crash, so no call is ever left pending. When a worker dies, a fresh one is started (re-running
 * init) and every call that was in flight is sent to it once more within its own timeoutMs; a call whose
 * worker dies a second time gets WorkerCrashedError (check(): the failure policy). A worker that does not
 * stop a timed-out or aborted check within `stuckWorkerGraceMs` (a wedged WebGPU or wasm run that never
 * yields to read the cancel) is treated as crashed: terminated, and replaced.
 */
import * as Comlink from 'comlink';
import { defendWith, judgeInputFailure, loadingStatus } from '../core/conductor.js';
import { abortedError, startDeadline } from '../core/deadline.js';
import type { DefenseResult } from '../core/defense.js';
import { deserializeError, serializeError, DisposedError, InvalidOptionsError, isEdgeArmorError, WorkerCrashedError } from '../core/errors.js';
import { readPlainData } from '../core/json.js';
import type { CheckOptions, DefendCallbacks, Guard, GuardProgress, GuardStatus } from '../core/guard-api.js';
import { resolveOptions, type GuardOptions, type ResolvedGuardOptions } from '../core/options.js';
import { splitRuntimeOptions, type ModelRuntimeOptions } from '../core/runtime-options.js';
import { validateFactoryOptions } from '../core/shell-options.js';
import type { Verdict } from '../core/verdict.js';
import { connectWorker, type WorkerConnection, type WorkerLike } from '../wire/endpoint.js';
import { heartbeatOptions, startHeartbeat } from './heartbeat.js';
import { CLIENT_OPTIONS, type ClientShellOptions } from './options.js';
import type { GuardWorkerApi, ModelLocation, WireResult, WorkerInitOptions } from '../wire/protocol.js';

export type { WorkerLike } from '../wire/endpoint.js';

/** Options of {@link createGuard}: the guard's options, the runtime options (shared with createNodeGuard), and where the worker and the model are. */
export interface CreateGuardOptions extends GuardOptions, ModelRuntimeOptions, ClientShellOptions {}

/** The options createGuard keeps on the page side; everything else is the guard's or the runtime's. */
const CLIENT_OPTION_KEYS = Object.keys(CLIENT_OPTIONS.entries) as Array<keyof ClientShellOptions>;

/** The embedded model's path under the app's public root. */
export const DEFAULT_MODEL_URL = 'models/edgearmor-proxy/';

// How long dispose() waits for the worker to release its session before terminating it anyway.
const DISPOSE_GRACE_MS = 2_000;
// A call is sent at most this often: once, and once more to a fresh worker when its worker died under it.
const MAX_ATTEMPTS = 2;
// Above a first wasm check on the embedded model (10.4 s in a Node worker thread on 2 busy cores).
const HEARTBEAT_TIMEOUT_MS = 15_000;

/** A guard whose model runs in a worker; same interface as the in-process guard. */
export interface WorkerGuard extends Guard {
  /** Sentence-level leave-one-out through the worker (what the local redactor uses). */
  scoreSentenceAblations(input: unknown, messageIndex: number, texts: string[], options?: CheckOptions): Promise<number[]>;
}

interface Session {
  id: number;
  remote: Comlink.Remote<GuardWorkerApi>;
  connection: WorkerConnection;
  /** Rejects with WorkerCrashedError when the worker dies; never resolves. */
  crashed: Promise<never>;
  /** What each of this session's in-flight calls does when the worker dies under it (each removes itself when it settles). */
  inFlight: Set<(error: Error) => void>;
  init: Promise<GuardStatus>;
  dead: boolean;
  /** Terminates the worker and hands its in-flight calls WorkerCrashedError; the next call starts a new one. */
  kill(reason: string): void;
}

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

function unwrap<T>(result: WireResult<T>): T {
  if (result.ok) return result.value;
  throw deserializeError(result.error);
}

/** Creates a guard backed by a worker running the guard service. */
export function createGuard(options: CreateGuardOptions = {}): WorkerGuard {
  const { worker, backend, onProgress, stuckWorkerGraceMs, heartbeatTimeoutMs } = options;
  validateFactoryOptions(CLIENT_OPTIONS, options as Record<string, unknown>);
  const { guard: guardOptions, runtime } = splitRuntimeOptions(options, CLIENT_OPTION_KEYS);
  const resolved: ResolvedGuardOptions = resolveOptions(guardOptions);
  const stuckGraceMs = stuckWorkerGraceMs ?? (CLIENT_OPTIONS.entries.stuckWorkerGraceMs.defaultValue as number);
  const heartbeat = heartbeatOptions(heartbeatTimeoutMs, HEARTBEAT_TIMEOUT_MS);
  const init: WorkerInitOptions = { ...runtime, guard: guardOptions, model: modelLocation(options), ...(backend !== undefined ? { backend } : {}) };
  // Fails here, not in the worker, when options cannot be cloned (functions, cycles).
  structuredClone(init);
  const makeWorker: () => WorkerLike = typeof worker === 'function' ? worker : worker !== undefined ? singleUse(worker) : defaultWorker;

  let current: Session | null = null;
  let sessionCount = 0;
  let requestCount = 0;
  let disposed = false;
  let lastStatus: GuardStatus | null = null;
  // Calls wait on per-call reject functions, never on a long-lived promise: racing every call against a
  // promise that never settles keeps each call's result reachable from it (a leak of one verdict a call).
  const inFlight = new Set<(error: Error) => void>();

  function singleUse(instance: WorkerLike): () => WorkerLike {
    let used = false;
    return () => {
      if (used) throw new WorkerCrashedError('The worker crashed and cannot be restarted: createGuard was given a Worker instance; pass a factory (() => new Worker(...)) to allow restarts.');
      used = true;
      return instance;
    };
  }

  function startSession(): Session {
    const id = ++sessionCount;
    const workerInstance = makeWorker();
    const connection = connectWorker(workerInstance);
    const remote = Comlink.wrap<GuardWorkerApi>(connection.endpoint);
    let rejectCrash: (error: Error) => void = () => undefined;
    const crashed = new Promise<never>((_, reject) => {
      rejectCrash = reject;
    });
    crashed.catch(() => undefined);
    const session: Session = {
      id,
      remote,
      connection,
      crashed,
      init: Promise.resolve(null as unknown as GuardStatus),
      dead: false,
      inFlight: new Set(),
      kill(reason) {
        if (session.dead) return;
        session.dead = true;
        connection.terminate();
        if (current === session) current = null;
        const error = new WorkerCrashedError(`The guard worker crashed (${reason}); its calls in flight go once more to a new worker, and get the failure policy if that one dies too.`, { reason, session: id });
        rejectCrash(error);
        for (const onDeath of [...session.inFlight]) onDeath(error);
      },
    };
    connection.onCrash((reason) => session.kill(reason));
    // Node worker_threads always report their exit, and a wasm run there blocks the thread for seconds (the
    // soak's first check: 10 s), so only browser Workers get the heartbeat unless heartbeatTimeoutMs is set.
    const isNodeWorker = typeof (workerInstance as { on?: unknown }).on === 'function';
    // Not while the model loads: compiling wasm and creating the session block a fresh worker for over
    // 10 s in Chromium on 2 busy cores (demo-dev's crash test), which a heartbeat would take for a death.
    let loaded = false;
    if (heartbeat && (heartbeatTimeoutMs !== undefined || !isNodeWorker)) {
      startHeartbeat(
        { ping: () => remote.status(), active: () => loaded && session.inFlight.size > 0, dead: () => session.dead, onSilent: (ms) => session.kill(`it answered no heartbeat for ${ms} ms`) },
        heartbeat,
      );
    }
    const progress = (event: GuardProgress) => {
      if (event.type === 'ready') {
        lastStatus = event.status;
        // The model is loaded. init's own answer can come seconds later (the worker sends it once every
        // progress event is acknowledged, and a first check can hold its event loop that long), and a worker
        // that died in between would otherwise keep its calls waiting for timeoutMs.
        loaded = true;
      }
      onProgress?.(event);
    };
    session.init = Promise.race([remote.init(init, Comlink.proxy(progress)).then((result) => unwrap<GuardStatus>(result)), crashed]).then((status) => {
      lastStatus = status;
      return status;
    });
    session.init.then(
      () => (loaded = true),
      () => (loaded = true),
    );
    return session;
  }

  function ensureSession(): Session {
    if (disposed) throw new DisposedError('The guard was disposed; create a new one.');
    current ??= startSession();
    return current;
  }

  const ready: Promise<GuardStatus> = (async () => ensureSession().init)();
  ready.catch(() => undefined);

  /**
   * Runs one remote operation, settling on its answer, abort, timeout, dispose, or its worker's second death
   * (WorkerCrashedError): a call in flight when its worker dies goes once more to a fresh one (module comment).
   */
  async function track<T>(opts: { signal?: AbortSignal | undefined; timeoutMs: number | null }, work: (session: Session, requestId: string) => Promise<T>): Promise<T> {
    if (opts.signal?.aborted) throw abortedError();
    let session = ensureSession();
    // The call's one deadline (core/deadline.ts): timeoutMs and the caller's abort, as the conductor's in the worker.
    const deadline = startDeadline(opts.timeoutMs, opts.signal);
    return new Promise<T>((resolve, reject) => {
      let requestId = '';
      let attempt = 0;
      let watchdog: ReturnType<typeof setTimeout> | undefined;
      const cancelRemote = () => {
        if (session.dead) return;
        const wedged = session;
        void wedged.remote.cancel(requestId).catch(() => undefined);
        // A worker that cannot even stop this call (it never yields to read the cancel) is wedged: replaced, its other calls re-sent.
        watchdog = setTimeout(() => wedged.kill(`it did not stop a cancelled call within ${stuckGraceMs} ms`), stuckGraceMs);
      };
      const onExpired = () => {
        cancelRemote();
        fail(deadline.signal.reason as Error);
      };
      const cleanup = () => {
        deadline.clear();
        deadline.signal.removeEventListener('abort', onExpired);
        session.inFlight.delete(onWorkerDeath);
        inFlight.delete(fail);
      };
      function fail(error: Error): void {
        cleanup();
        reject(error);
      }
      function onWorkerDeath(error: Error): void {
        session.inFlight.delete(onWorkerDeath);
        if (attempt >= MAX_ATTEMPTS || disposed) return fail(error);
        try {
          session = ensureSession();
        } catch (e) {
          return fail(e as Error);
        }
        send();
      }
      function send(): void {
        const mine = ++attempt;
        requestId = `${session.id}:${++requestCount}`;
        session.inFlight.add(onWorkerDeath);
        const working = work(session, requestId);
        // Any answer from the worker, even a refusal, shows it is not wedged.
        const stopWatchdog = () => {
          if (mine === attempt) clearTimeout(watchdog);
        };
        working.then(stopWatchdog, stopWatchdog);
        working.then(
          (value) => {
            if (mine !== attempt) return;
            cleanup();
            resolve(value);
          },
          (error: unknown) => {
            if (mine === attempt) fail(isEdgeArmorError(error) ? error : deserializeError(serializeError(error)));
          },
        );
      }
      inFlight.add(fail);
      deadline.signal.addEventListener('abort', onExpired, { once: true });
      send();
    });
  }

  async function check(raw: unknown, opts: CheckOptions = {}): Promise<Verdict> {
    if (disposed) throw new DisposedError('The guard was disposed; create a new one.');
    // Read once, here, into plain data, as the in-process guard reads it before parsing (core/json.ts): the same
    // values cross or are refused with the same error, naming the field; the worker validates, plans, scores and
    // judges the copy, and a failure below is judged on it.
    const input = readPlainData(raw, 'input');
    const extras = () => (lastStatus?.backend ? { backend: lastStatus.backend } : {});
    let used: Session | null = null;
    try {
      const verdict = await track({ signal: opts.signal, timeoutMs: resolved.timeoutMs }, async (session, requestId) => {
        used = session;
        // Sent at once, behind init on the same port: the worker validates while the model loads, and a model
        // that failed to load is answered by the worker's guard (the failure policy); a crash rejects in track.
        return unwrap(await session.remote.check(requestId, input));
      });
      // This call got the failure policy; a worker whose GPU device is gone, or whose memory ran out, is replaced for the next one.
      const code = verdict.error?.code;
      if (used !== null && (code === 'device-lost' || code === 'out-of-memory')) (used as Session).kill(`${code} during inference`);
      return verdict;
    } catch (error) {
      // The worker did not answer in time (it may be wedged), or died under the call (security-model.md lists
      // worker crash among the policy's failures): the core's failure policy answers, as in the in-process guard,
      // on the input validated here (only on this path: on every other the worker validates it, once).
      if (isEdgeArmorError(error) && (error.code === 'timeout' || error.code === 'worker-crashed')) {
        return judgeInputFailure(error, input, resolved, extras());
      }
      throw error;
    }
  }

  async function scoreSentenceAblations(raw: unknown, messageIndex: number, texts: string[], opts: CheckOptions = {}): Promise<number[]> {
    if (disposed) throw new DisposedError('The guard was disposed; create a new one.');
    const [input, sentences] = [readPlainData(raw, 'input'), readPlainData(texts, 'texts') as string[]];
    return track({ signal: opts.signal, timeoutMs: resolved.timeoutMs }, async (session, requestId) => {
      await session.init;
      return unwrap(await session.remote.scoreSentenceAblations(requestId, input, messageIndex, sentences));
    });
  }

  const guard: WorkerGuard = {
    ready,
    async status() {
      if (disposed) return { ...(lastStatus ?? (await ready.catch(() => null)) ?? emptyStatus()), state: 'disposed' };
      return track({ timeoutMs: null }, (session) => session.remote.status());
    },
    check,
    scoreSentenceAblations,
    async defend(raw: unknown, callbacks: DefendCallbacks, opts: CheckOptions = {}): Promise<DefenseResult> {
      const scorer = {
        check: (input: unknown, o?: CheckOptions) => check(input, o),
        scoreSentenceAblations: (input: unknown, index: number, texts: string[]) => scoreSentenceAblations(input, index, texts, opts),
      };
      return defendWith(scorer, resolved, raw, callbacks, opts);
    },
    async dispose() {
      if (disposed) return;
      disposed = true;
      const error = new DisposedError('The guard was disposed while this call was in flight.');
      for (const reject of [...inFlight]) reject(error);
      const session = current;
      current = null;
      if (!session) return;
      session.dead = true;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const grace = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, DISPOSE_GRACE_MS);
      });
      await Promise.race([session.remote.dispose().catch(() => undefined), grace, session.crashed.catch(() => undefined)]);
      clearTimeout(timer);
      try {
        session.remote[Comlink.releaseProxy]();
      } finally {
        session.connection.terminate();
      }
    },
  };
  return guard;
}

function emptyStatus(): GuardStatus {
  return { ...loadingStatus(), state: 'disposed' };
}
