/**
 * A browser Worker that dies gives no exit event: in-flight calls must not wait for
 * `timeoutMs`. Client level, with a fake browser Worker (postMessage / addEventListener /
 * terminate over a MessageChannel, the browser API and nothing of Node's): an `error` event, or a
 * worker gone silent (the heartbeat), ends that worker, and every in-flight check is sent once more to
 * a new one; a check whose second worker dies too is answered with the failure policy (WorkerCrashedError).
 */
import * as Comlink from 'comlink';
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createGuard, type WorkerGuard } from '../../src/page/create-guard.js';
import type { BrowserWorkerLike } from '../../src/wire/endpoint.js';
import { heartbeatOptions } from '../../src/page/heartbeat.js';
import { createWorkerService } from '../../src/worker/service.js';
import type { GuardStatus } from '../../src/core/guard-api.js';
import type { LocalGuard, LocalGuardRuntime } from '../../src/engine/local-guard.js';

// Far above a healthy round trip over a MessageChannel, far below the 30 s default timeoutMs the calls would otherwise wait for.
const HEARTBEAT_TIMEOUT_MS = 300;
const CHECK_TIMEOUT_MS = 60_000;
// A silent death must be answered within a few heartbeat timeouts, long before CHECK_TIMEOUT_MS.
const SILENT_DEATH_TEST_MS = 20 * HEARTBEAT_TIMEOUT_MS;

const STATUS: GuardStatus = { state: 'ready', backend: 'wasm', fallbackReason: null, model: 'fake', variant: 'q4', maxContextTokens: 1024, windowTokens: 1024, logitsUnavailable: null, attention: false, scoring: 'prefix', modelOptions: null, familiarity: { threshold: null, checks: 0, below: 0 } };

const CASE = {
  messages: [
    { role: 'user', content: 'Pay my rent from the file.' },
    { role: 'tool', tool_name: 'read_file', content: 'Rent: 900 EUR to landlord.' },
  ],
  action: { name: 'send_money', arguments: { amount: 900 } },
};

/**
 * A fake browser Worker: the service runs on the other end of a MessageChannel; `hang` checks never answer.
 * With `holdInit` the model reports 'ready' but init never answers, as a real worker busy with its first
 * check answers init late (it waits for the client to acknowledge every progress event first).
 */
class FakeBrowserWorker implements BrowserWorkerLike {
  readonly port: MessagePort;
  readonly inner: MessagePort;
  terminated = false;
  private readonly errorListeners = new Set<(event: unknown) => void>();

  constructor(hang: { value: boolean }, { holdInit = false } = {}) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.inner = port2;
    const fakeGuard = (_options: unknown, runtime: LocalGuardRuntime): LocalGuard => {
      runtime.onProgress?.({ type: 'ready', status: STATUS });
      return {
        ready: holdInit ? new Promise<never>(() => undefined) : Promise.resolve(STATUS),
        status: async () => STATUS,
        check: async () => {
          if (hang.value) await new Promise<never>(() => undefined);
          return { detected: false, decision: 'allow', reason: 'model', attribution: null, flagged: [], score: null, timings: {} };
        },
        scoreSentenceAblations: async () => [],
        defend: () => Promise.reject(new Error('not used')),
        dispose: async () => undefined,
      };
    };
    Comlink.expose(createWorkerService({ createLocalGuard: fakeGuard, isNode: false, gpu: undefined }), nodeEndpoint(port2));
  }

  postMessage(message: unknown, transfer: Transferable[]): void {
    this.port.postMessage(message, transfer as never);
  }
  addEventListener(type: string, listener: (event: unknown) => void): void {
    if (type === 'error') this.errorListeners.add(listener);
    else this.port.addEventListener(type as 'message', listener as never);
  }
  removeEventListener(type: string, listener: (event: unknown) => void): void {
    if (type === 'error') this.errorListeners.delete(listener);
    else this.port.removeEventListener(type as 'message', listener as never);
  }
  terminate(): void {
    this.terminated = true;
    this.port.close();
  }
  /** What a browser does on an uncaught error in the worker. */
  fireError(message: string): void {
    for (const l of this.errorListeners) l({ message });
  }
  /** A silent death: the worker stops answering and no event arrives (the service's end goes away). */
  dieSilently(): void {
    this.inner.removeAllListeners('message');
    this.inner.unref();
  }
}

const guards: WorkerGuard[] = [];
afterEach(async () => {
  await Promise.all(guards.splice(0).map((g) => g.dispose()));
});

function setup(heartbeatTimeoutMs: number | null = HEARTBEAT_TIMEOUT_MS, worker: { holdInit?: boolean } = {}) {
  const hang = { value: true };
  const workers: FakeBrowserWorker[] = [];
  const guard = createGuard({ worker: () => workers[workers.push(new FakeBrowserWorker(hang, worker)) - 1]!, modelUrl: 'https://example.test/m/', timeoutMs: CHECK_TIMEOUT_MS, heartbeatTimeoutMs });
  guards.push(guard);
  return { guard, workers, hang };
}

const CRASH_BLOCK = { decision: 'block', reason: 'failure-policy', error: { code: 'worker-crashed', name: 'WorkerCrashedError' } };

describe('a crashed browser worker', () => {
  it("sends every in-flight check to a new worker on the worker's error event, and the new worker answers them", async () => {
    const { guard, workers, hang } = setup(null);
    await guard.ready;
    const calls = [guard.check(CASE), guard.check(CASE), guard.check(CASE)];
    await new Promise((r) => setTimeout(r, 20));
    hang.value = false;
    workers[0]!.fireError('RangeError: Maximum call stack size exceeded');
    for (const verdict of await Promise.all(calls)) expect(verdict).toMatchObject({ reason: 'model' });
    expect(workers[0]!.terminated).toBe(true);
    expect(workers).toHaveLength(2);
    expect(await guard.check(CASE)).toMatchObject({ reason: 'model' });
    expect(workers).toHaveLength(2);
  });

  it('answers an in-flight check with the failure policy when its second worker dies too, then restarts', async () => {
    const { guard, workers, hang } = setup(null);
    await guard.ready;
    const calls = [guard.check(CASE), guard.check(CASE)];
    await new Promise((r) => setTimeout(r, 20));
    workers[0]!.fireError('RangeError: Maximum call stack size exceeded');
    while (workers.length < 2) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20));
    workers[1]!.fireError('RangeError: Maximum call stack size exceeded');
    const verdicts = await Promise.all(calls);
    for (const verdict of verdicts) expect(verdict).toMatchObject(CRASH_BLOCK);
    expect(verdicts[0]!.error?.message).toMatch(/Maximum call stack size exceeded/);
    hang.value = false;
    expect(await guard.check(CASE)).toMatchObject({ reason: 'model' });
    expect(workers).toHaveLength(3);
  });

  it('ends a worker that goes silent without any event (heartbeat) and sends its in-flight checks to a new one', async () => {
    const { guard, workers, hang } = setup();
    await guard.ready;
    const calls = [guard.check(CASE), guard.check(CASE)];
    await new Promise((r) => setTimeout(r, 20));
    hang.value = false;
    workers[0]!.dieSilently();
    for (const verdict of await Promise.all(calls)) expect(verdict).toMatchObject({ reason: 'model' });
    expect(workers[0]!.terminated).toBe(true);
    expect(workers).toHaveLength(2);
  }, SILENT_DEATH_TEST_MS);

  it("watches a worker from its model's ready event, before its init answer arrives, so a silent death right after the first check is caught", async () => {
    const { guard, workers, hang } = setup(HEARTBEAT_TIMEOUT_MS, { holdInit: true });
    hang.value = false;
    expect(await guard.check(CASE)).toMatchObject({ reason: 'model' });
    hang.value = true;
    const calls = [guard.check(CASE), guard.check(CASE)];
    await new Promise((r) => setTimeout(r, 20));
    hang.value = false;
    workers[0]!.dieSilently();
    for (const verdict of await Promise.all(calls)) expect(verdict).toMatchObject({ reason: 'model' });
    expect(workers[0]!.terminated).toBe(true);
  }, SILENT_DEATH_TEST_MS);

  it('keeps a worker that answers its heartbeat while a check runs long', async () => {
    const { guard, workers, hang } = setup();
    await guard.ready;
    const call = guard.check(CASE);
    // Several heartbeat timeouts pass; the worker's event loop is free, so it answers every ping.
    await new Promise((r) => setTimeout(r, HEARTBEAT_TIMEOUT_MS * 4));
    expect(workers[0]!.terminated).toBe(false);
    hang.value = false;
    expect(await guard.check(CASE)).toMatchObject({ reason: 'model' });
    expect(workers).toHaveLength(1);
    void call.catch(() => undefined);
  });

  it('refuses a heartbeatTimeoutMs that is not a positive number, naming what is allowed', () => {
    expect(() => heartbeatOptions(0)).toThrow(/heartbeatTimeoutMs: received 0; allowed: a finite number of milliseconds > 0, or null/);
    expect(() => createGuard({ worker: () => new FakeBrowserWorker({ value: false }), modelUrl: 'https://example.test/m/', heartbeatTimeoutMs: Number.NaN })).toThrow(/heartbeatTimeoutMs/);
    expect(heartbeatOptions(null)).toBeNull();
    expect(heartbeatOptions(undefined)).toEqual({ intervalMs: 1000, timeoutMs: 15_000 });
  });
});
