/**
 * onnxruntime-node in a child process: the conductor's Scorer port over the scorer protocol
 * (wire/protocol.ts, the same messages and cancel rule as the Web Worker's) on Node's IPC channel. The
 * host process never reads, hashes or runs the model, so its event loop stays free during a check, and a
 * crash, an abort in native code or an out-of-memory kill takes down only the child: the call in flight
 * gets the failure policy, and the next call starts a fresh child (which verifies the model again).
 * A child that does not stop a cancelled call within `cancelGraceMs` is killed. Every child is reaped,
 * also when the worker thread that started it is terminated (see startReapedProcess).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Socket } from 'node:net';
import { constants } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMainThread, Worker } from 'node:worker_threads';
import { joinReasons, type OrtBackend } from '../core/backend-plan.js';
import { WorkerCrashedError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { ModelRuntimeOptions } from '../core/runtime-options.js';
import type { LoadedScorer } from '../core/scorer-port.js';
import { DEFAULT_STUCK_GRACE_MS } from '../core/shell-options.js';
import type { ScorerReply } from '../wire/protocol.js';
import { createRemoteScorer, type ScorerLink } from '../wire/scorer-client.js';
import type { NodeModelLocation } from './files-node.js';
import { loadEngineScorer, type LocalGuardRuntime } from './local-guard.js';

/** What the child needs to load its model (the `load` message of the scorer protocol). */
export interface ProcessLoad {
  location: NodeModelLocation;
  runtime: Omit<ModelRuntimeOptions, 'modelManifest'>;
  backends: OrtBackend[];
}

/** Where the isolated scorer runs: a child process, or (where none can start) a worker thread running wasm. */
export type IsolationHost = 'process' | 'thread';

/** Options of {@link loadProcessScorer}. */
export interface ProcessScorerOptions extends ProcessLoad {
  /** @defaultValue 'process' */
  host?: IsolationHost;
  /** How long the child may take to stop a cancelled call, or to release its model on dispose, before it is killed. @defaultValue 2000 (createNodeGuard's stuckWorkerGraceMs) */
  cancelGraceMs?: number;
  onProgress?: (event: GuardProgress) => void;
  /** Called right after a score request is sent, with the child's pid (tests kill it there, mid-check). */
  onScoreSent?: (pid: number) => void;
}

/**
 * The child's script: the built .js beside this module, or the .ts source under tsx (tests, `npm run`
 * scripts). A bundler that inlined EdgeArmor into an app's bundle leaves it behind: that is a child
 * that cannot start, and the guard falls back with this reason.
 */
function childEntry(what: string): { file: string; typescript: boolean } {
  const js = fileURLToPath(new URL('./process-child.js', import.meta.url));
  if (existsSync(js)) return { file: js, typescript: false };
  const ts = fileURLToPath(new URL('./process-child.ts', import.meta.url));
  if (existsSync(ts)) return { file: ts, typescript: true };
  throw new WorkerCrashedError(
    `The ${what} could not be started (its script ${js} is missing: a bundle that inlined edgearmor leaves it behind; keep edgearmor external to the bundle)`,
    { reason: 'spawn' },
  );
}

/** The host's end of the link to a child process or a worker thread: the same messages either way. */
type Link = ScorerLink & Required<Pick<ScorerLink, 'hold'>>;

/** How a child ended, as the exit event says it: its signal's name, or its exit code. */
const ended = (code: number | null, signal: string | null) => `exited (${signal ?? `code ${String(code)}`})`;

/** The link's side of the IPC channel: messages, and whether it keeps the host alive. */
function channelLink(proc: ChildProcess, kill: () => void): Pick<Link, 'send' | 'hold' | 'onMessage'> {
  return {
    // A write the channel refuses (the child died under it: EPIPE, or a channel already closed) makes sure the
    // child is gone; its end then reaches onGone, and the calls in flight get the failure policy.
    send: (message) => void proc.send(message, (error) => error && kill()),
    hold: (busy) => void (busy ? proc.channel?.ref() : proc.channel?.unref()),
    onMessage: (listener) => void proc.on('message', (reply) => listener(reply as ScorerReply)),
  };
}

function startForkedProcess(file: string, execArgv: string[]): Link {
  const proc = fork(file, [], { serialization: 'advanced', execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const kill = () => void proc.kill('SIGKILL');
  return {
    pid: proc.pid,
    ...channelLink(proc, kill),
    kill,
    onGone(listener) {
      proc.on('error', (error) => listener(`could not be started or reached (${error.message})`));
      proc.on('exit', (code, signal) => listener(ended(code, signal)));
    },
  };
}

/**
 * The shell script that starts a child from a worker thread: a background subshell runs the child, writes its
 * pid and then its exit status to descriptor 4, and closes its own copy of the IPC descriptor 3 so the channel
 * ends with the child; the shell itself exits at once.
 */
const REAPER_SCRIPT = '("$@" 4>&- & child=$!; exec 3>&-; echo "$child" >&4; wait "$child" 2>/dev/null; echo "$?" >&4) &';

/**
 * A child forked by a worker thread is reaped by no one once that thread is terminated (libuv waits only for the
 * children of a live loop, and `terminate()` runs no JavaScript there), so it would stay a zombie for the host's
 * lifetime. From a worker thread the child is started through REAPER_SCRIPT instead: this thread reaps the shell
 * at once, the subshell reaps the child, and init reaps the orphaned subshell, whatever happens to the thread.
 */
function startReapedProcess(file: string, execArgv: string[]): Link {
  const shell = spawn('/bin/sh', ['-c', REAPER_SCRIPT, 'sh', process.execPath, ...execArgv, file], { serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc', 'pipe'] });
  const report = shell.stdio[4] as Socket;
  // Only the channel keeps the host alive (while calls are in flight), as for a forked child.
  report.unref();
  report.setEncoding('utf8');
  // A read error on the pipe loses only the status; the close that follows still reports the child's end.
  report.on('error', () => undefined);
  let text = '';
  let pid: number | undefined;
  let killed = false;
  const kill = () => {
    killed = true;
    if (pid === undefined) return;
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  report.on('data', (chunk: string) => {
    text += chunk;
    if (pid !== undefined || !text.includes('\n')) return;
    pid = Number(text.slice(0, text.indexOf('\n')));
    if (killed) kill();
  });
  return {
    get pid() {
      return pid;
    },
    ...channelLink(shell, kill),
    kill,
    onGone(listener) {
      shell.on('error', (error) => listener(`could not be started or reached (${error.message})`));
      // The pipe closes once the subshell has reaped the child and written its status (the shell's: 128 + signal).
      report.on('close', () => {
        const status = Number(text.split('\n')[1] || Number.NaN);
        const signal = status > 128 ? Object.entries(constants.signals).find(([, n]) => n === status - 128)?.[0] ?? null : null;
        listener(Number.isNaN(status) ? 'exited' : ended(signal === null ? status : null, signal));
      });
    },
  };
}

function startLink(host: IsolationHost): Link {
  const what = host === 'process' ? 'scoring process' : 'scoring thread';
  const { file, typescript } = childEntry(what);
  try {
    if (host === 'process') {
      const execArgv = typescript ? ['--import', 'tsx'] : [];
      // A main thread's loop lives as long as the host and reaps its children; Windows has no zombies. A system
      // without /bin/sh (a distroless image) forks directly: the child works, and only a terminated thread leaves it unreaped.
      const reaped = !isMainThread && process.platform !== 'win32' && existsSync('/bin/sh');
      return reaped ? startReapedProcess(file, execArgv) : startForkedProcess(file, execArgv);
    }
    // A Worker inherits the host's flags, and refuses some of them (`node --input-type=module -e ...`).
    const execArgv = process.execArgv.filter((flag) => !flag.startsWith('--input-type'));
    // Node ignores `--import tsx` in a Worker's execArgv: the .ts source registers tsx first.
    const source = typescript
      ? new Worker(`import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(pathToFileURL(file).href)}); })`, { eval: true, execArgv })
      : new Worker(file, { execArgv });
    return {
      pid: undefined,
      send: (message) => source.postMessage(message),
      hold: (busy) => void (busy ? source.ref() : source.unref()),
      kill: () => void source.terminate(),
      onMessage: (listener) => void source.on('message', (reply: ScorerReply) => listener(reply)),
      onGone(listener) {
        source.on('error', (error) => listener(`failed (${error.message})`));
        source.on('exit', (code) => listener(`exited (code ${code})`));
      },
    };
  } catch (error) {
    // E.g. Node's permission model without --allow-child-process (or --allow-worker).
    throw new WorkerCrashedError(`The ${what} could not be started (${(error as Error).message}).`, { reason: 'spawn' });
  }
}

/** Starts a child process (or thread), loads the model there, and returns the scorer that talks to it. */
export async function loadProcessScorer(options: ProcessScorerOptions): Promise<LoadedScorer> {
  const host = options.host ?? 'process';
  const { onScoreSent } = options;
  const remote = createRemoteScorer<ProcessLoad>({
    start: () => startLink(host),
    load: { location: options.location, runtime: options.runtime, backends: options.backends },
    hostName: host === 'process' ? 'scoring process' : 'scoring thread',
    cancelGraceMs: options.cancelGraceMs ?? DEFAULT_STUCK_GRACE_MS,
    // The call a dead child was running gets the failure policy; the calls queued behind it go to the next child.
    resendOnDeath: false,
    ...(options.onProgress ? { onProgress: options.onProgress } : {}),
    // Named apart from onnxruntime-node in this process; a child that fell back to wasm keeps 'wasm' (and says why).
    describe: (info) => ({ ...info, backend: info.backend === 'node' ? 'node-process' : info.backend }),
    ...(onScoreSent ? { onScoreSent: (link: ScorerLink) => void (link.pid !== undefined && onScoreSent(link.pid)) } : {}),
  });
  try {
    return await remote.load();
  } catch (error) {
    await remote.dispose();
    throw error;
  }
}

/** A load failure's message as a clause of a fallback reason. */
const clause = (error: Error) => error.message.replace(/(; the next call starts a new one)?\.$/, '');

/**
 * onnxruntime-node in a child process; where none can start (Node's permission model, a host that
 * forbids spawning), wasm in a worker thread, so the host's event loop stays free; where no thread can
 * start either, wasm in this thread; each time with the reason. A model that fails its checks fails them
 * anywhere, so only a child that could not run falls back.
 */
export async function loadIsolatedScorer(options: ProcessScorerOptions, here: LocalGuardRuntime): Promise<LoadedScorer> {
  const withReason = (loaded: LoadedScorer, reason: string): LoadedScorer => ({ ...loaded, fallbackReason: joinReasons(reason, loaded.fallbackReason) });
  let processError: WorkerCrashedError;
  try {
    return await loadProcessScorer(options);
  } catch (error) {
    if (!(error instanceof WorkerCrashedError)) throw error;
    processError = error;
  }
  try {
    return withReason(await loadProcessScorer({ ...options, host: 'thread', backends: ['wasm'] }), `isolation 'process': ${clause(processError)}; onnxruntime-web wasm runs in a worker thread instead`);
  } catch (error) {
    if (!(error instanceof WorkerCrashedError)) throw error;
    const loaded = await loadEngineScorer({ ...here, backends: ['wasm'] });
    return withReason(loaded, `isolation 'process': ${clause(processError)}; no worker thread either (${clause(error)}); onnxruntime-web wasm runs in this process instead`);
  }
}
