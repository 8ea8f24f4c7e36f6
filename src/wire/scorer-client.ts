/**
 * The conductor's side of a scorer hosted elsewhere (a Web Worker, a Node worker thread, a child
 * process): the Scorer port over the scorer protocol (protocol.ts), whatever link carries it. One rule
 * for every host:
 *
 * - A cancelled request (the call's deadline or the caller's abort) is cancelled in the host; a host that
 *   does not answer it within `cancelGraceMs` (a native, WebGPU or wasm run that never reads the cancel)
 *   is killed.
 * - A host that dies (killed, crashed, silent past its heartbeat, or whose GPU device or memory is gone)
 *   is replaced on the next request, which loads the model again there.
 * - With `resendOnDeath`, every request in flight goes once more to the next host, and the host holds
 *   them all (it runs them one at a time); without, each request is sent alone and the one a death
 *   interrupts fails with WorkerCrashedError (the conductor's failure policy answers it).
 */
import { abortedError } from '../core/deadline.js';
import { deserializeError, DisposedError, isEdgeArmorError, WorkerCrashedError } from '../core/errors.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { CheckScores } from '../core/judge.js';
import type { LoadedScorer, Scorer, ScorerInfo, ScoreRequest } from '../core/scorer-port.js';
import { startHeartbeat } from './heartbeat.js';
import type { ScorerCall, ScorerReply, WireScoreRequest } from './protocol.js';

/** The conductor's end of the link to one scorer host: the same messages over any channel. */
export interface ScorerLink {
  /** The host's process id, when it is a child process. */
  readonly pid?: number | undefined;
  send(call: ScorerCall<unknown>): void;
  onMessage(listener: (reply: ScorerReply) => void): void;
  /** Called once the host is gone, with why. */
  onGone(listener: (why: string) => void): void;
  /** Ends the host now (terminate, SIGKILL). */
  kill(): void;
  /** Whether the host can die without an event (a browser Worker), so the heartbeat watches it. */
  readonly silentDeath?: boolean;
  /** Whether the link may keep a Node host alive (only while requests are in flight). */
  hold?(busy: boolean): void;
}

/** Options of {@link createRemoteScorer}. */
export interface RemoteScorerOptions<L> {
  /** Starts a new host; throws WorkerCrashedError when none can start. */
  start(): ScorerLink;
  /** What the host needs to load its model (plain data, already valid). */
  load: L;
  /** The host in messages: 'guard worker', 'scoring process'. */
  hostName: string;
  /** How long a host may take to stop a cancelled request, or to release its model on dispose, before it is killed. */
  cancelGraceMs: number;
  /** Every request in flight goes once more to the next host when its host dies (module comment). */
  resendOnDeath: boolean;
  /** A host that leaves a ping unanswered for `timeoutMs` while requests are in flight is treated as dead; null: no heartbeat. */
  heartbeat?: { intervalMs: number; timeoutMs: number } | null;
  onProgress?: (event: GuardProgress) => void;
  /** What the conductor reports for the host's scorer (e.g. 'node' becomes 'node-process'). */
  describe?: (info: ScorerInfo) => ScorerInfo;
  /** Called right after a score request is sent (tests kill the host there, mid-check). */
  onScoreSent?: (link: ScorerLink) => void;
}

/** A scorer hosted elsewhere, before and after its load. */
export interface RemoteScorer {
  /** Starts a host (or uses the live one) and waits for its model. */
  load(): Promise<LoadedScorer>;
  /** Releases the host's model (within cancelGraceMs), ends the host, and fails every request and load in flight with DisposedError. */
  dispose(): Promise<void>;
}

type Loaded = Extract<ScorerReply, { type: 'loaded' }>;

interface Call {
  request: WireScoreRequest;
  signal: AbortSignal | undefined;
  attempts: number;
  /** The id of its latest sending, and whether that sending reached the host (the model had loaded). */
  id: number;
  sent: boolean;
  session: Session | null;
  watchdog: ReturnType<typeof setTimeout> | undefined;
  resolve(scores: CheckScores): void;
  reject(error: Error): void;
}

interface Session {
  link: ScorerLink;
  loaded: Promise<Loaded>;
  /** Requests this host was given and has not answered, by id. */
  pending: Map<number, Call>;
  pings: Map<number, () => void>;
  isLoaded: boolean;
  dead: boolean;
  gone: Promise<void>;
  disposed: Promise<void>;
  kill(why: string): void;
}

// Codes after which a host cannot score again: its GPU device is gone, or its memory ran out.
const FATAL_CODES: ReadonlySet<string> = new Set(['device-lost', 'out-of-memory']);

/** Creates the Scorer port over hosts that `options.start` starts, one at a time. */
export function createRemoteScorer<L>(options: RemoteScorerOptions<L>): RemoteScorer {
  let current: Session | null = null;
  let requests = 0;
  let disposed = false;
  let info: ScorerInfo | null = null;
  const loads = new Set<(error: Error) => void>();

  function startSession(): Session {
    const link = options.start();
    let settleLoad!: { resolve: (loaded: Loaded) => void; reject: (error: Error) => void };
    const loaded = new Promise<Loaded>((resolve, reject) => (settleLoad = { resolve, reject }));
    loaded.catch(() => undefined);
    let markGone!: () => void;
    let markDisposed!: () => void;
    const session: Session = {
      link,
      loaded,
      pending: new Map(),
      pings: new Map(),
      isLoaded: false,
      dead: false,
      gone: new Promise<void>((resolve) => (markGone = resolve)),
      disposed: new Promise<void>((resolve) => (markDisposed = resolve)),
      kill(why) {
        link.kill();
        died(why);
      },
    };
    const idle = () => {
      if (session.pending.size === 0) link.hold?.(false);
    };
    function died(why: string): void {
      markGone();
      if (session.dead) return;
      session.dead = true;
      if (current === session) current = null;
      const error = new WorkerCrashedError(`The ${options.hostName} ${why}; the next call starts a new one.`, { reason: why });
      settleLoad.reject(error);
      const calls = [...session.pending.values()];
      session.pending.clear();
      for (const call of calls) {
        clearTimeout(call.watchdog);
        if (!disposed && options.resendOnDeath && call.attempts < 2 && !call.signal?.aborted) dispatch(call);
        else finish(call, error);
      }
    }
    link.onGone(died);
    link.onMessage((reply) => {
      switch (reply.type) {
        case 'progress':
          options.onProgress?.(reply.event);
          return;
        case 'loaded':
          session.isLoaded = true;
          settleLoad.resolve(reply);
          idle();
          return;
        case 'load-failed':
          settleLoad.reject(deserializeError(reply.error));
          idle();
          return;
        case 'pong':
          session.pings.get(reply.id)?.();
          session.pings.delete(reply.id);
          return;
        case 'disposed':
          markDisposed();
          return;
        default: {
          const call = session.pending.get(reply.id);
          session.pending.delete(reply.id);
          idle();
          if (call === undefined || call.id !== reply.id) return;
          if (reply.type === 'scored') return finish(call, null, reply.scores);
          const error = deserializeError(reply.error);
          finish(call, error);
          if (FATAL_CODES.has(error.code)) session.kill(`could not score again (${error.code} during inference)`);
        }
      }
    });
    if (options.heartbeat && link.silentDeath) {
      let pings = 0;
      startHeartbeat(
        {
          ping: () =>
            new Promise<void>((resolve) => {
              const id = ++pings;
              session.pings.set(id, resolve);
              link.send({ type: 'ping', id });
            }),
          active: () => session.isLoaded && session.pending.size > 0,
          dead: () => session.dead,
          onSilent: (ms) => session.kill(`answered no heartbeat for ${ms} ms`),
        },
        options.heartbeat,
      );
    }
    link.hold?.(true);
    link.send({ type: 'load', load: options.load });
    return session;
  }

  function live(): Session {
    if (disposed) throw new DisposedError('The guard was disposed; create a new one.');
    current ??= startSession();
    return current;
  }

  function finish(call: Call, error: Error | null, scores?: CheckScores): void {
    clearTimeout(call.watchdog);
    call.session = null;
    if (error) call.reject(error);
    else call.resolve(scores!);
  }

  /** Gives a call to the live host: sent once its model has loaded, kept in its pending set until answered. */
  function dispatch(call: Call): void {
    let session: Session;
    try {
      session = live();
    } catch (error) {
      return finish(call, error as Error);
    }
    call.attempts += 1;
    call.id = ++requests;
    call.sent = false;
    call.session = session;
    session.pending.set(call.id, call);
    const id = call.id;
    session.loaded.then(
      () => {
        if (session.pending.get(id) !== call || session.dead) return;
        session.link.hold?.(true);
        call.sent = true;
        session.link.send({ type: 'score', id, request: call.request });
        options.onScoreSent?.(session.link);
      },
      // A host that died while loading hands its calls on (died); one whose model failed to load answers them with that failure.
      (error: Error) => {
        if (session.dead || session.pending.get(id) !== call) return;
        session.pending.delete(id);
        finish(call, error);
      },
    );
  }

  function cancel(call: Call): void {
    const session = call.session;
    if (session === null || session.dead) return;
    if (!call.sent) {
      session.pending.delete(call.id);
      return finish(call, abortedError());
    }
    session.link.send({ type: 'cancel', id: call.id });
    call.watchdog = setTimeout(() => session.kill(`did not stop a cancelled call within ${options.cancelGraceMs} ms`), options.cancelGraceMs);
  }

  const scorer: Scorer = {
    get info(): ScorerInfo {
      if (info === null) throw new WorkerCrashedError(`The ${options.hostName} has not loaded a model yet.`);
      return info;
    },
    queuesRequests: options.resendOnDeath,
    score(request: ScoreRequest): Promise<CheckScores> {
      const { signal, ...plain } = request;
      if (signal?.aborted) return Promise.reject(isEdgeArmorError(signal.reason) ? signal.reason : abortedError());
      return new Promise<CheckScores>((resolve, reject) => {
        const onAbort = () => cancel(call);
        const done = () => signal?.removeEventListener('abort', onAbort);
        const call: Call = {
          request: plain,
          signal,
          attempts: 0,
          id: 0,
          sent: false,
          session: null,
          watchdog: undefined,
          resolve: (scores) => {
            done();
            resolve(scores);
          },
          reject: (error) => {
            done();
            reject(error);
          },
        };
        signal?.addEventListener('abort', onAbort, { once: true });
        dispatch(call);
      });
    },
    dispose: () => dispose(),
  };

  /** Loads on the live host (a new one after a death: the conductor loads again after a host died while loading). */
  async function load(): Promise<LoadedScorer> {
    const session = live();
    const loaded = await new Promise<Loaded>((resolve, reject) => {
      loads.add(reject);
      session.loaded.then(resolve, reject).finally(() => loads.delete(reject));
    });
    info = options.describe ? options.describe(loaded.info) : loaded.info;
    return { scorer, modelOptions: loaded.modelOptions, fallbackReason: loaded.fallbackReason };
  }

  async function dispose(): Promise<void> {
    if (disposed) return;
    disposed = true;
    const error = new DisposedError('The guard was disposed while this call was in flight.');
    for (const reject of [...loads]) reject(error);
    const session = current;
    current = null;
    if (session === null) return;
    const calls = [...session.pending.values()];
    session.pending.clear();
    for (const call of calls) finish(call, error);
    if (!session.dead) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, options.cancelGraceMs)));
      session.link.hold?.(true);
      session.link.send({ type: 'dispose' });
      await Promise.race([session.disposed, session.gone, grace]);
      clearTimeout(timer);
      session.dead = true;
      session.link.kill();
    }
  }

  return { load, dispose };
}
