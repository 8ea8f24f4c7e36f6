/**
 * A browser Worker that dies gives no exit event: in-flight calls must not wait for
 * `timeoutMs`. Client level, with a fake browser Worker (postMessage / addEventListener /
 * terminate over a MessageChannel, the browser API and nothing of Node's): an `error` event, or a
 * worker gone silent (the heartbeat), ends that worker, and every in-flight check is sent once more to
 * a new one; a check whose second worker dies too is answered with the failure policy (WorkerCrashedError).
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createGuard, type WorkerGuard } from '../../src/page/create-guard.js';
import type { BrowserWorkerLike } from '../../src/wire/endpoint.js';
import { heartbeatOptions } from '../../src/wire/heartbeat.js';
import { serveWorkerScorer } from '../../src/worker/service.js';
import type { ScorerInfo, ScoreRequest } from '../../src/core/scorer-port.js';
import { recordingScorer } from './recording-scorer.js';

// Far above a healthy round trip over a MessageChannel, far below the 30 s default timeoutMs the calls would otherwise wait for.
const HEARTBEAT_TIMEOUT_MS = 300;
const CHECK_TIMEOUT_MS = 60_000;
// How often a held fake run looks whether it may answer.
const HANG_POLL_MS = 10;
// A silent death must be answered within a few heartbeat timeouts, long before CHECK_TIMEOUT_MS.
const SILENT_DEATH_TEST_MS = 20 * HEARTBEAT_TIMEOUT_MS;

const INFO: ScorerInfo = { backend: 'wasm', model: 'fake', variant: 'q4', maxContextTokens: 1024, maxTextChars: 100_000, scoring: 'prefix', attention: false, attentionUnavailable: 'the fake has none', chatFormat: 'edgearmor' };

const CASE = {
  messages: [
    { role: 'user', content: 'Pay my rent from the file.' },
    { role: 'tool', tool_name: 'read_file', content: 'Rent: 900 EUR to landlord.' },
  ],
  action: { name: 'send_money', arguments: { amount: 900 } },
};

/** A fake browser Worker: the scorer host runs on the other end of a MessageChannel; while `hang` is set, its scorer does not answer. */
class FakeBrowserWorker implements BrowserWorkerLike {
  readonly port: MessagePort;
  readonly inner: MessagePort;
  terminated = false;
  /** Set by dieSilently: the scorer never answers again. */
  private silent = false;
  private readonly errorListeners = new Set<(event: unknown) => void>();

  constructor(hang: { value: boolean }) {
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.inner = port2;
    const flat = recordingScorer([], INFO);
    const scorer = {
      ...flat,
      score: async (request: ScoreRequest) => {
        while (hang.value || this.silent) await new Promise((resolve) => setTimeout(resolve, HANG_POLL_MS));
        return flat.score(request);
      },
    };
    serveWorkerScorer(port2, { loadScorer: async () => ({ scorer, modelOptions: null }), isNode: false, gpu: undefined });
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
    this.silent = true;
    this.inner.removeAllListeners('message');
    this.inner.unref();
  }
}

const guards: WorkerGuard[] = [];
afterEach(async () => {
  await Promise.all(guards.splice(0).map((g) => g.dispose()));
});

function setup(heartbeatTimeoutMs: number | null = HEARTBEAT_TIMEOUT_MS) {
  const hang = { value: true };
  const workers: FakeBrowserWorker[] = [];
  const guard = createGuard({ worker: () => workers[workers.push(new FakeBrowserWorker(hang)) - 1]!, modelUrl: 'https://example.test/m/', timeoutMs: CHECK_TIMEOUT_MS, heartbeatTimeoutMs });
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

  it('watches a worker from its load answer on, so a silent death right after the first check is caught', async () => {
    const { guard, workers, hang } = setup(HEARTBEAT_TIMEOUT_MS);
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
