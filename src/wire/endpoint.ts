/**
 * Both ends of the worker connection, for browser Workers and Node worker_threads alike: the
 * client's view of a worker (a Comlink endpoint plus crash detection and termination) and the
 * worker's own endpoint for `Comlink.expose`.
 */
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { InvalidOptionsError } from '../core/errors.js';

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

/** What createGuard can run the guard service behind. */
export type WorkerLike = BrowserWorkerLike | NodeWorkerLike;

/** A live connection to one worker. */
export interface WorkerConnection {
  endpoint: Comlink.Endpoint;
  /** Registers the one crash listener; `reason` says what happened. */
  onCrash(listener: (reason: string) => void): void;
  /** Stops the worker (or closes the port) and removes the listeners. */
  terminate(): void;
}

function isNodeLike(worker: WorkerLike): worker is NodeWorkerLike {
  // A Node MessagePort has both APIs; `on` is the one whose events carry raw data, which node-adapter expects.
  return typeof (worker as Partial<NodeWorkerLike>).on === 'function';
}

function describe(value: unknown): string {
  if (value instanceof Error) return value.message;
  const message = (value as { message?: unknown } | null)?.message;
  return typeof message === 'string' && message !== '' ? message : 'no details';
}

/** Wraps a browser or Node worker into a Comlink endpoint with crash detection. */
export function connectWorker(worker: WorkerLike): WorkerConnection {
  let crashListener: ((reason: string) => void) | null = null;
  let closed = false;
  const crash = (reason: string) => {
    if (closed) return;
    crashListener?.(reason);
  };
  if (isNodeLike(worker)) {
    const events: Array<[string, (...args: unknown[]) => void]> = [
      ['error', (e) => crash(`the worker threw an uncaught error: ${describe(e)}`)],
      ['messageerror', (e) => crash(`a message from the worker could not be deserialised: ${describe(e)}`)],
      ['exit', (code) => crash(`the worker exited with code ${String(code)}`)],
      ['close', () => crash('the worker port was closed')],
    ];
    for (const [type, listener] of events) worker.on(type, listener);
    return {
      endpoint: nodeEndpoint(worker),
      onCrash: (listener) => {
        crashListener = listener;
      },
      terminate: () => {
        if (closed) return;
        closed = true;
        for (const [type, listener] of events) worker.off(type, listener);
        if (worker.terminate) void Promise.resolve(worker.terminate()).catch(() => undefined);
        else worker.close?.();
      },
    };
  }
  const events: Array<[string, (event: unknown) => void]> = [
    ['error', (e) => crash(`the worker threw an uncaught error: ${describe(e)}`)],
    ['messageerror', () => crash('a message from the worker could not be deserialised')],
  ];
  for (const [type, listener] of events) worker.addEventListener(type, listener);
  return {
    endpoint: worker as unknown as Comlink.Endpoint,
    onCrash: (listener) => {
      crashListener = listener;
    },
    terminate: () => {
      if (closed) return;
      closed = true;
      for (const [type, listener] of events) worker.removeEventListener(type, listener);
      worker.terminate();
    },
  };
}

/** Whether this code runs in Node (the main thread or a worker_threads Worker) rather than a browser. */
export function isNodeRuntime(): boolean {
  const proc = (globalThis as { process?: { versions?: { node?: string } } }).process;
  return typeof proc?.versions?.node === 'string';
}

/** Exposes a service from inside a worker: `self` in browsers, `parentPort` under Node worker_threads. */
export function exposeInWorker(service: object): void {
  if (!isNodeRuntime()) {
    // Synchronous, so no message can arrive before the listener exists.
    Comlink.expose(service);
    return;
  }
  // Hidden from bundlers: browser builds must not try to resolve node:worker_threads.
  const specifier = 'node:worker_threads';
  void (import(/* @vite-ignore */ specifier) as Promise<typeof import('node:worker_threads')>).then(({ parentPort }) => {
    if (!parentPort) throw new InvalidOptionsError('exposeInWorker: not inside a worker thread (parentPort is null); call it from the worker file only');
    // parentPort queues messages until a listener is attached, so the async import loses none.
    Comlink.expose(service, nodeEndpoint(parentPort as unknown as Parameters<typeof nodeEndpoint>[0]));
  });
}
