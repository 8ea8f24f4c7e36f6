/**
 * Both ends of the scorer protocol over a worker, for browser Workers and Node worker_threads alike:
 * the conductor's link to a worker (its messages, its death, its end) and the worker's own port, on
 * which the scorer host answers.
 */
import { InvalidOptionsError } from '../core/errors.js';
import { transferables, type ScorerCall, type ScorerReply } from './protocol.js';
import type { ScorerLink } from './scorer-client.js';

/** A browser `Worker` (or anything with its event API). */
export interface BrowserWorkerLike {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: string, listener: (event: unknown) => void): void;
  removeEventListener(type: string, listener: (event: unknown) => void): void;
  terminate(): void;
}

/** A Node `worker_threads` Worker or MessagePort (EventEmitter-style `on`/`off`). */
export interface NodeWorkerLike {
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  on(type: string, listener: (...args: unknown[]) => void): unknown;
  off(type: string, listener: (...args: unknown[]) => void): unknown;
  start?: () => void;
  /** worker_threads Worker */
  terminate?: () => unknown;
  /** MessagePort */
  close?: () => void;
}

/** What createGuard can run its scorer behind. */
export type WorkerLike = BrowserWorkerLike | NodeWorkerLike;

function isNodeLike(worker: WorkerLike): worker is NodeWorkerLike {
  // A Node MessagePort has both APIs; `on` is the one whose events carry the message itself.
  return typeof (worker as Partial<NodeWorkerLike>).on === 'function';
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  const message = (value as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message : 'no details';
}

/** The scorer link to a browser Worker, a Node worker thread or a MessagePort: its messages, its death, its end. */
export function workerLink(worker: WorkerLike): ScorerLink {
  let goneListener: ((why: string) => void) | null = null;
  let closed = false;
  const messageListeners: Array<(reply: ScorerReply) => void> = [];
  const deliver = (data: unknown) => {
    for (const listener of messageListeners) listener(data as ScorerReply);
  };
  // A worker that threw may still run: it is ended, so nothing it does later reaches the guard.
  const gone = (why: string) => {
    if (closed) return;
    closed = true;
    detach();
    end();
    goneListener?.(why);
  };
  let detach: () => void;
  let post: (call: ScorerCall<unknown>) => void;
  let end: () => void;
  if (isNodeLike(worker)) {
    const events: Array<[string, (...args: unknown[]) => void]> = [
      ['message', (data) => deliver(data)],
      ['error', (e) => gone(`threw an uncaught error: ${describe(e)}`)],
      ['messageerror', (e) => gone(`sent a message that could not be deserialised: ${describe(e)}`)],
      ['exit', (code) => gone(`exited with code ${String(code)}`)],
      ['close', () => gone('closed its port')],
    ];
    for (const [type, listener] of events) worker.on(type, listener);
    detach = () => {
      for (const [type, listener] of events) worker.off(type, listener);
    };
    post = (call) => worker.postMessage(call);
    end = () => {
      if (worker.terminate) void Promise.resolve(worker.terminate()).catch(() => undefined);
      else worker.close?.();
    };
  } else {
    const events: Array<[string, (event: unknown) => void]> = [
      ['message', (event) => deliver((event as { data: unknown }).data)],
      ['error', (e) => gone(`threw an uncaught error: ${describe(e)}`)],
      ['messageerror', () => gone('sent a message that could not be deserialised')],
    ];
    for (const [type, listener] of events) worker.addEventListener(type, listener);
    detach = () => {
      for (const [type, listener] of events) worker.removeEventListener(type, listener);
    };
    post = (call) => worker.postMessage(call, []);
    end = () => worker.terminate();
  }
  return {
    send(call) {
      if (!closed) post(call);
    },
    onMessage: (listener) => void messageListeners.push(listener),
    onGone: (listener) => {
      goneListener = listener;
    },
    kill() {
      if (closed) return;
      closed = true;
      detach();
      end();
    },
  };
}

/** The port a scorer host answers through: a browser worker's own scope, or a Node parentPort or MessagePort. */
export type HostPort =
  | { postMessage(message: unknown, transfer: Transferable[]): void; addEventListener(type: 'message', listener: (event: MessageEvent) => void): void }
  | { postMessage(message: unknown, transfer?: readonly ArrayBuffer[]): void; on(type: 'message', listener: (data: unknown) => void): unknown };

/** Serves a scorer host on `port`: each call it receives goes to the host, each reply goes back with its score buffers moved, not copied. */
export function serveOn<L>(port: HostPort, makeHost: (post: (reply: ScorerReply) => void) => (call: ScorerCall<L>) => void): void {
  const host = makeHost((reply) => (port.postMessage as (message: unknown, transfer: ArrayBuffer[]) => void)(reply, transferables(reply)));
  if ('on' in port) port.on('message', (data) => host(data as ScorerCall<L>));
  else port.addEventListener('message', (event) => host(event.data as ScorerCall<L>));
}

/** Whether this code runs in Node (the main thread or a worker_threads Worker) rather than a browser. */
export function isNodeRuntime(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === 'string';
}

/** Serves a scorer host from inside a worker: on `self` in browsers, on `parentPort` under Node worker_threads. */
export function serveInWorker<L>(makeHost: (post: (reply: ScorerReply) => void) => (call: ScorerCall<L>) => void): void {
  if (!isNodeRuntime()) {
    // Synchronous, so no message can arrive before the listener exists.
    serveOn(globalThis as unknown as HostPort, makeHost);
    return;
  }
  // Hidden from bundlers: browser builds must not try to resolve node:worker_threads.
  const specifier = 'node:worker_threads';
  void (import(/* @vite-ignore */ specifier) as Promise<typeof import('node:worker_threads')>).then(({ parentPort }) => {
    if (!parentPort) throw new InvalidOptionsError('serveInWorker: not inside a worker thread (parentPort is null); call it from the worker file only');
    // parentPort queues messages until a listener is attached, so the async import loses none.
    serveOn(parentPort as unknown as HostPort, makeHost);
  });
}
