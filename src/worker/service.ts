/**
 * The guard service that runs inside the worker: the core's conductor (over the engine loaded here)
 * behind the wire protocol, with one AbortController per request so `cancel(requestId)` stops that
 * request's model work. The backends come from the core's planner.
 */
import { releaseProxy } from 'comlink';
import { planBackends, type BackendHost } from '../core/backend-plan.js';
import { createConductor, loadingStatus, type LocalGuard } from '../core/conductor.js';
import { IntegrityError, InvalidOptionsError, isEdgeArmorError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { GuardOptions } from '../core/options.js';
import { splitRuntimeOptions } from '../core/runtime-options.js';
import { createBrowserReader, type BrowserFileReader } from '../engine/files-browser.js';
import { createLocalGuard, type LocalGuardRuntime } from '../engine/local-guard.js';
import { withManifest, type FileReader } from '../engine/model-files.js';
import type { ProcessScorerOptions } from '../engine/process-scorer.js';
import { isNodeRuntime } from '../wire/endpoint.js';
import { settle, type GuardWorkerApi, type WireResult, type WorkerInitOptions } from '../wire/protocol.js';

/** Seams for tests and other hosts; the defaults build the real engine. */
export interface WorkerServiceDeps {
  /** @defaultValue createLocalGuard */
  createLocalGuard?: (options: GuardOptions, runtime: LocalGuardRuntime) => LocalGuard;
  /** @defaultValue globalThis.navigator?.gpu */
  gpu?: BackendHost['gpu'];
  /** Whether this is Node (worker_threads). @defaultValue detected from process.versions.node */
  isNode?: boolean;
  /** Whether this Node code runs in a worker thread rather than the main thread. @defaultValue detected from worker_threads.isMainThread */
  isWorkerThread?: boolean;
}

async function detectWorkerThread(isNode: boolean): Promise<boolean> {
  if (!isNode) return false;
  // Hidden from bundlers: browser builds must not try to resolve node:worker_threads.
  const specifier = 'node:worker_threads';
  const { isMainThread } = (await import(/* @vite-ignore */ specifier)) as typeof import('node:worker_threads');
  return !isMainThread;
}

/** The child-process scorer (Node only), hidden from bundlers as the Node file loader is: it imports node:child_process. */
async function processScorer(): Promise<typeof import('../engine/process-scorer.js')> {
  const specifier = '../engine/process-scorer.js';
  return (await import(/* @vite-ignore */ specifier)) as typeof import('../engine/process-scorer.js');
}

/** Creates the service a worker exposes with `Comlink.expose`. */
export function createWorkerService(deps: WorkerServiceDeps = {}): GuardWorkerApi {
  const makeGuard = deps.createLocalGuard ?? createLocalGuard;
  const isNode = deps.isNode ?? isNodeRuntime();
  let guard: LocalGuard | null = null;
  const requests = new Map<string, AbortController>();

  // Calls sent right after init wait for the guard to exist (not for the model): bad input still fails fast while loading.
  let initCalled = false;
  let guardMade: (made: LocalGuard | null) => void = () => undefined;
  const made = new Promise<LocalGuard | null>((resolve) => (guardMade = resolve));
  const requireGuard = async (): Promise<LocalGuard> => {
    const g = guard ?? (initCalled ? await made : null);
    if (!g) throw new InvalidOptionsError('The worker received a call before init(); the client must call init first.');
    return g;
  };

  const withRequest = async <T>(requestId: string, work: (signal: AbortSignal) => Promise<T>): Promise<WireResult<T>> => {
    // Registered before the first await so a cancel sent right after the call always finds it.
    const controller = new AbortController();
    requests.set(requestId, controller);
    try {
      return await settle(() => work(controller.signal));
    } finally {
      requests.delete(requestId);
    }
  };

  async function makeReader(init: WorkerInitOptions, onProgress: (e: GuardProgress) => void): Promise<FileReader> {
    if ('baseUrl' in init.model) {
      const reader = createBrowserReader({ baseUrl: init.model.baseUrl, onProgress });
      // A given manifest replaces the location's; the cache eviction after an integrity failure stays.
      return init.modelManifest ? Object.assign(withManifest(reader, init.modelManifest), { evict: reader.evict, readFromCache: reader.readFromCache }) : reader;
    }
    if (!isNode) throw new InvalidOptionsError('Invalid option model: a model directory ({dir}) works only in Node; in a browser give {baseUrl}.');
    // Hidden from bundlers, as node:worker_threads above: a browser build must not pull the Node file loader
    // (node:fs, node:crypto, node:path...) into its graph, where each built-in is an "externalized" warning.
    const loader = '../engine/files-node.js';
    const { directoryReader } = (await import(/* @vite-ignore */ loader)) as typeof import('../engine/files-node.js');
    const reader = directoryReader(init.model.dir);
    return init.modelManifest ? withManifest(reader, init.modelManifest) : reader;
  }

  return {
    async init(init, onProgress) {
      initCalled = true;
      const delivered: Promise<unknown>[] = [];
      const report = (event: GuardProgress) => {
        // A progress listener that went away must not fail the load.
        delivered.push(Promise.resolve(onProgress(event)).catch(() => undefined));
      };
      const result = await settle(async () => {
        if (guard) throw new InvalidOptionsError('init() was called twice on the same worker; create a new worker instead.');
        let runtime: LocalGuardRuntime;
        // In a Node worker thread onnxruntime-node runs in a child process (terminating the thread in a native run would abort the host).
        let isolated: ProcessScorerOptions | null = null;
        try {
          const isWorkerThread = deps.isWorkerThread ?? (await detectWorkerThread(isNode));
          const plan = await planBackends(init.backend ?? 'auto', { isNode, isWorkerThread, gpu: 'gpu' in deps ? deps.gpu : (globalThis.navigator as { gpu?: BackendHost['gpu'] } | undefined)?.gpu });
          const { modelManifest, ...runtimeOptions } = splitRuntimeOptions(init, ['guard', 'model', 'backend']).runtime;
          runtime = { ...runtimeOptions, reader: await makeReader(init, report), backends: plan.backends, fallbackReason: plan.fallbackReason, onProgress: report };
          if (plan.inChildProcess !== undefined && runtimeOptions.remoteProxy === undefined && 'dir' in init.model) {
            isolated = { location: { modelDir: init.model.dir, modelManifest }, runtime: runtimeOptions, backends: plan.inChildProcess, onProgress: report };
          }
        } catch (error) {
          // The guard still answers checks, as an in-process guard whose model failed to load does: the core applies the failure policy.
          runtime = { reader: () => Promise.reject(error), backends: [], onProgress: report, loadFailure: error };
        }
        try {
          const child = isolated;
          const here: LocalGuardRuntime = { ...runtime, fallbackReason: null };
          guard = child ? createConductor(init.guard, { load: async () => (await processScorer()).loadIsolatedScorer(child, here), onProgress: report }) : makeGuard(init.guard, runtime);
        } finally {
          guardMade(guard);
        }
        const reader = runtime.reader;
        try {
          return await guard.ready;
        } catch (error) {
          if (error instanceof IntegrityError && 'evict' in reader) {
            const file = typeof error.details['file'] === 'string' ? error.details['file'] : null;
            const browserReader = reader as BrowserFileReader;
            if (file !== null) {
              const cached = browserReader.readFromCache(file);
              await browserReader.evict(file);
              if (cached) {
                throw new IntegrityError(`${error.message} (the copy came from Cache Storage and was evicted; a reload fetches it again)`, { ...error.details, fromCache: true });
              }
            }
          }
          throw error;
        }
      });
      // Progress travels on its own port: wait until the client has every event, so all of them arrive before init's answer.
      await Promise.all(delivered);
      // Release the progress proxy so its MessagePort closes on the client side.
      const release = (onProgress as unknown as Partial<Record<typeof releaseProxy, () => void>>)[releaseProxy];
      if (typeof release === 'function') release();
      return result;
    },

    check: (requestId, input) => withRequest(requestId, async (signal) => (await requireGuard()).check(input, { signal })),

    scoreSentenceAblations: (requestId, input, messageIndex, texts) =>
      withRequest(requestId, async (signal) => (await requireGuard()).scoreSentenceAblations(input, messageIndex, texts, { signal })),

    async cancel(requestId) {
      requests.get(requestId)?.abort();
    },

    async status() {
      return guard ? guard.status() : loadingStatus();
    },

    async dispose() {
      for (const controller of requests.values()) controller.abort();
      requests.clear();
      await guard?.dispose().catch((e: unknown) => {
        if (!isEdgeArmorError(e)) throw e;
      });
    },
  };
}
