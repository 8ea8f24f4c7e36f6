/**
 * The worker's scorer host: inside a Web Worker or a Node worker thread, it plans the backends (the
 * core's planner, for this host), reads and verifies the model, loads the engine, and scores what the
 * page's conductor sends over the scorer protocol. It validates nothing the page already did and judges
 * nothing: the options arrive resolved, and the verdict is made on the page.
 */
import { joinReasons, planBackends, type BackendHost } from '../core/backend-plan.js';
import { IntegrityError, InvalidOptionsError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { LoadedScorer } from '../core/scorer-port.js';
import { createBrowserReader, type BrowserFileReader } from '../engine/files-browser.js';
import { loadEngineScorer, type LocalGuardRuntime } from '../engine/local-guard.js';
import { withManifest, type FileReader } from '../engine/model-files.js';
import { isNodeRuntime, serveOn, type HostPort } from '../wire/endpoint.js';
import type { ScorerCall, ScorerReply, WorkerLoad } from '../wire/protocol.js';
import { createScorerHost } from '../wire/scorer-host.js';

/** Seams for tests and other hosts; the defaults load the real engine. */
export interface WorkerScorerDeps {
  /** @defaultValue loadEngineScorer */
  loadScorer?: (runtime: LocalGuardRuntime) => Promise<LoadedScorer>;
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

async function makeReader(load: WorkerLoad, isNode: boolean, onProgress: (e: GuardProgress) => void): Promise<FileReader> {
  if ('baseUrl' in load.model) {
    const reader = createBrowserReader({ baseUrl: load.model.baseUrl, onProgress });
    // A given manifest replaces the location's; the cache eviction after an integrity failure stays.
    return load.modelManifest ? Object.assign(withManifest(reader, load.modelManifest), { evict: reader.evict, readFromCache: reader.readFromCache }) : reader;
  }
  if (!isNode) throw new InvalidOptionsError('Invalid option model: a model directory ({dir}) works only in Node; in a browser give {baseUrl}.');
  // Hidden from bundlers, as node:worker_threads above: a browser build must not pull the Node file loader
  // (node:fs, node:crypto, node:path...) into its graph, where each built-in is an "externalized" warning.
  const loader = '../engine/files-node.js';
  const { directoryReader } = (await import(/* @vite-ignore */ loader)) as typeof import('../engine/files-node.js');
  const reader = directoryReader(load.model.dir);
  return load.modelManifest ? withManifest(reader, load.modelManifest) : reader;
}

/** A copy the browser cache served that failed its hash check is evicted, and the error says a reload fetches it again. */
async function evictTampered(error: unknown, reader: FileReader): Promise<never> {
  if (error instanceof IntegrityError && 'evict' in reader) {
    const file = typeof error.details['file'] === 'string' ? error.details['file'] : null;
    const browserReader = reader as BrowserFileReader;
    if (file !== null) {
      const cached = browserReader.readFromCache(file);
      await browserReader.evict(file);
      if (cached) throw new IntegrityError(`${error.message} (the copy came from Cache Storage and was evicted; a reload fetches it again)`, { ...error.details, fromCache: true });
    }
  }
  throw error;
}

/** Loads the worker's scorer: plans the backends for this host, then loads the engine here, or (a Node worker thread asking for onnxruntime-node) in a child process. */
export async function loadWorkerScorer(load: WorkerLoad, onProgress: (event: GuardProgress) => void, deps: WorkerScorerDeps = {}): Promise<LoadedScorer> {
  const isNode = deps.isNode ?? isNodeRuntime();
  const isWorkerThread = deps.isWorkerThread ?? (await detectWorkerThread(isNode));
  const plan = await planBackends(load.backend, { isNode, isWorkerThread, gpu: 'gpu' in deps ? deps.gpu : (globalThis.navigator as { gpu?: BackendHost['gpu'] } | undefined)?.gpu });
  const reader = await makeReader(load, isNode, onProgress);
  const runtime: LocalGuardRuntime = { ...load.runtime, reader, backends: plan.backends, onProgress };
  try {
    // In a Node worker thread onnxruntime-node runs in a child process (terminating the thread in a native run would abort the host);
    // the plan's reason for wasm in this thread then does not apply.
    if (plan.inChildProcess !== undefined && load.runtime.remoteProxy === undefined && 'dir' in load.model) {
      const location = { modelDir: load.model.dir, ...(load.modelManifest ? { modelManifest: load.modelManifest } : {}) };
      return await (await processScorer()).loadIsolatedScorer({ location, runtime: load.runtime, backends: plan.inChildProcess, onProgress }, runtime);
    }
    const loaded = await (deps.loadScorer ?? loadEngineScorer)(runtime);
    return { ...loaded, fallbackReason: joinReasons(plan.fallbackReason, loaded.fallbackReason) };
  } catch (error) {
    return evictTampered(error, reader);
  }
}

/** The worker's message handler: the scorer host over {@link loadWorkerScorer}. */
export function createWorkerScorerHost(post: (reply: ScorerReply) => void, deps: WorkerScorerDeps = {}): (call: ScorerCall<WorkerLoad>) => void {
  return createScorerHost<WorkerLoad>({ load: (load, onProgress) => loadWorkerScorer(load, onProgress, deps), post });
}

/** Serves the worker's scorer host on a port (the worker's own scope, its parentPort, or one end of a MessageChannel in tests). */
export function serveWorkerScorer(port: HostPort, deps: WorkerScorerDeps = {}): void {
  serveOn<WorkerLoad>(port, (post) => createWorkerScorerHost(post, deps));
}
