/**
 * onnxruntime-node in a child process: the conductor's Scorer port over Node's IPC channel. The host
 * process never reads, hashes or runs the model, so its event loop stays free during a check, and a
 * crash, an abort in native code or an out-of-memory kill takes down only the child: the call in flight
 * gets the failure policy, and the next call starts a fresh child (which verifies the model again).
 * A child that does not stop a cancelled call within 2 s is killed.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { OrtBackend } from '../core/backend-plan.js';
import { deserializeError, DisposedError, WorkerCrashedError, type WireError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { CheckScores } from '../core/judge.js';
import type { ModelOptionsFile } from '../core/model-options.js';
import type { ModelRuntimeOptions } from '../core/runtime-options.js';
import type { LoadedScorer, Scorer, ScorerInfo, ScoreRequest } from '../core/scorer-port.js';
import type { NodeModelLocation } from './files-node.js';
import { loadEngineScorer, type LocalGuardRuntime } from './local-guard.js';

/** What the host sends the child. */
export type ChildRequest =
  | { type: 'load'; location: NodeModelLocation; runtime: Omit<ModelRuntimeOptions, 'modelManifest'>; backends: OrtBackend[] }
  | { type: 'score'; id: number; request: Omit<ScoreRequest, 'signal'> }
  | { type: 'cancel'; id: number }
  | { type: 'dispose' };

/** What the child answers. */
export type ChildReply =
  | { type: 'progress'; event: GuardProgress }
  | { type: 'loaded'; info: ScorerInfo; modelOptions: ModelOptionsFile | null; fallbackReason: string | null }
  | { type: 'load-failed'; error: WireError }
  | { type: 'scored'; id: number; scores: CheckScores }
  | { type: 'failed'; id: number; error: WireError };

/** Options of {@link loadProcessScorer}. */
export interface ProcessScorerOptions {
  location: NodeModelLocation;
  runtime: Omit<ModelRuntimeOptions, 'modelManifest'>;
  backends: OrtBackend[];
  onProgress?: (event: GuardProgress) => void;
  /** Called right after a score request is sent, with the child's pid (tests kill it there, mid-check). */
  onScoreSent?: (pid: number) => void;
}

const CANCEL_GRACE_MS = 2_000;

/**
 * The child's script: the built .js beside this module, or the .ts source under tsx (tests, `npm run`
 * scripts). A bundler that inlined EdgeArmor into an app's bundle leaves it behind: that is a child
 * that cannot start, and the guard falls back with this reason.
 */
function childEntry(): { file: string; execArgv: string[] } {
  const js = fileURLToPath(new URL('./process-child.js', import.meta.url));
  if (existsSync(js)) return { file: js, execArgv: [] };
  const ts = fileURLToPath(new URL('./process-child.ts', import.meta.url));
  if (existsSync(ts)) return { file: ts, execArgv: ['--import', 'tsx'] };
  throw new WorkerCrashedError(
    `The scoring process could not be started (its script ${js} is missing: a bundle that inlined edgearmor leaves it behind; keep edgearmor external to the bundle)`,
    { reason: 'spawn' },
  );
}

interface Pending {
  resolve: (scores: CheckScores) => void;
  reject: (error: Error) => void;
}

/** One child process: its load, its calls in flight, and its death. */
interface Child {
  proc: ChildProcess;
  loaded: Promise<Extract<ChildReply, { type: 'loaded' }>>;
  pending: Map<number, Pending>;
  dead: boolean;
  send(message: ChildRequest): void;
}

function startChild(options: ProcessScorerOptions): Child {
  const { file, execArgv } = childEntry();
  let proc: ChildProcess;
  try {
    proc = fork(file, [], { serialization: 'advanced', execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  } catch (error) {
    // E.g. Node's permission model without --allow-child-process.
    throw new WorkerCrashedError(`The scoring process could not be started (${(error as Error).message}).`, { reason: 'spawn' });
  }
  const pending = new Map<number, Pending>();
  let settleLoad: { resolve: (m: Extract<ChildReply, { type: 'loaded' }>) => void; reject: (e: Error) => void } | undefined;
  const loaded = new Promise<Extract<ChildReply, { type: 'loaded' }>>((resolve, reject) => (settleLoad = { resolve, reject }));
  loaded.catch(() => undefined);
  const child: Child = {
    proc,
    loaded,
    pending,
    dead: false,
    send(message) {
      // The channel keeps the host alive only while the child works for it.
      proc.channel?.ref();
      proc.send(message);
    },
  };
  const idle = () => {
    if (pending.size === 0) proc.channel?.unref();
  };
  const die = (why: string) => {
    if (child.dead) return;
    child.dead = true;
    const error = new WorkerCrashedError(`The scoring process ${why}; the next check starts a new one.`, { reason: why });
    settleLoad?.reject(error);
    for (const call of pending.values()) call.reject(error);
    pending.clear();
  };
  proc.on('message', (reply: ChildReply) => {
    if (reply.type === 'progress') options.onProgress?.(reply.event);
    else if (reply.type === 'loaded') {
      settleLoad?.resolve(reply);
      idle();
    } else if (reply.type === 'load-failed') {
      settleLoad?.reject(deserializeError(reply.error));
      idle();
    } else {
      const call = pending.get(reply.id);
      pending.delete(reply.id);
      if (reply.type === 'scored') call?.resolve(reply.scores);
      else call?.reject(deserializeError(reply.error));
      idle();
    }
  });
  proc.on('error', (error) => die(`could not be started or reached (${error.message})`));
  proc.on('exit', (code, signal) => die(`exited (${signal ?? `code ${String(code)}`})`));
  child.send({ type: 'load', location: options.location, runtime: options.runtime, backends: options.backends });
  return child;
}

/** The Scorer port over a child process, restarted after a death. */
class ProcessScorer implements Scorer {
  private requests = 0;
  private disposed = false;

  constructor(
    private child: Child,
    readonly info: ScorerInfo,
    private readonly options: ProcessScorerOptions,
  ) {}

  /** The live child, a new one (loaded again) when the last one died. */
  private async live(): Promise<Child> {
    if (this.disposed) throw new DisposedError('The scoring process was disposed with its guard.');
    if (this.child.dead) {
      this.child = startChild(this.options);
      await this.child.loaded;
    }
    return this.child;
  }

  async score(request: ScoreRequest): Promise<CheckScores> {
    const { signal, ...plain } = request;
    signal?.throwIfAborted();
    const child = await this.live();
    signal?.throwIfAborted();
    const id = ++this.requests;
    return new Promise<CheckScores>((resolve, reject) => {
      let grace: ReturnType<typeof setTimeout> | undefined;
      const onAbort = () => {
        child.send({ type: 'cancel', id });
        // A native run that never reads the cancel is stopped the only way it can be.
        grace = setTimeout(() => child.proc.kill('SIGKILL'), CANCEL_GRACE_MS);
      };
      const done = () => {
        clearTimeout(grace);
        signal?.removeEventListener('abort', onAbort);
      };
      child.pending.set(id, {
        resolve: (scores) => {
          done();
          resolve(scores);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      signal?.addEventListener('abort', onAbort, { once: true });
      child.send({ type: 'score', id, request: plain });
      if (child.proc.pid !== undefined) this.options.onScoreSent?.(child.proc.pid);
    });
  }

  async dispose(): Promise<void> {
    if (this.disposed) return;
    this.disposed = true;
    const child = this.child;
    if (child.dead) return;
    const exited = new Promise<void>((resolve) => child.proc.once('exit', () => resolve()));
    child.send({ type: 'dispose' });
    const timer = setTimeout(() => child.proc.kill('SIGKILL'), CANCEL_GRACE_MS);
    await exited;
    clearTimeout(timer);
  }
}

/** Starts a child process, loads the model there, and returns the scorer that talks to it. */
export async function loadProcessScorer(options: ProcessScorerOptions): Promise<LoadedScorer> {
  const child = startChild(options);
  let loaded: Extract<ChildReply, { type: 'loaded' }>;
  try {
    loaded = await child.loaded;
  } catch (error) {
    if (!child.dead) child.proc.kill('SIGKILL');
    throw error;
  }
  // Named apart from onnxruntime-node in this process; a child that fell back to wasm keeps 'wasm' (and says why).
  const info: ScorerInfo = { ...loaded.info, backend: loaded.info.backend === 'node' ? 'node-process' : loaded.info.backend };
  return { scorer: new ProcessScorer(child, info, options), modelOptions: loaded.modelOptions, fallbackReason: loaded.fallbackReason };
}

/**
 * onnxruntime in a child process, or where none can start (Node's permission model, a host that forbids
 * spawning) wasm in this thread with the reason. A model that fails its checks fails them in any process,
 * so only a child that could not run falls back.
 */
export async function loadIsolatedScorer(options: ProcessScorerOptions, here: LocalGuardRuntime): Promise<LoadedScorer> {
  try {
    return await loadProcessScorer(options);
  } catch (error) {
    if (!(error instanceof WorkerCrashedError)) throw error;
    const loaded = await loadEngineScorer({ ...here, backends: ['wasm'] });
    const reason = `isolation 'process': ${error.message.replace(/(; the next check starts a new one)?\.$/, '')}; onnxruntime-web wasm runs in this process instead`;
    return { ...loaded, fallbackReason: [reason, loaded.fallbackReason].filter(Boolean).join('; ') };
  }
}
