import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createGuard, type CreateGuardOptions, type WorkerGuard } from '../../src/page/create-guard.js';
import { NATIVE_IN_WORKER_THREAD_REASON, planBackends } from '../../src/core/backend-plan.js';
import { serveWorkerScorer } from '../../src/worker/service.js';
import { DeviceLostError, DisposedError, GuardAbortedError, IntegrityError, InvalidInputError, ModelLoadError, OutOfMemoryError } from '../../src/core/errors.js';
import { callLogProbPerToken } from '../../src/core/familiarity.js';
import type { GuardProgress } from '../../src/core/guard-api.js';
import type { CheckScores } from '../../src/core/judge.js';
import type { LoadedScorer, ScoreRequest, ScorerInfo } from '../../src/core/scorer-port.js';
import type { Verdict } from '../../src/core/verdict.js';
import type { LocalGuardRuntime } from '../../src/engine/local-guard.js';

// Long enough that a healthy round trip never hits it, short enough to keep the timeout test quick.
const SHORT_TIMEOUT_MS = 200;

const INFO: ScorerInfo = {
  backend: 'node',
  model: 'fake-proxy',
  variant: 'q4',
  maxContextTokens: 1024,
  maxTextChars: 100_000,
  scoring: 'prefix',
  attention: false,
  attentionUnavailable: 'the fake has none',
  chatFormat: 'edgearmor',
};

/** A guard case whose action arguments steer the fake scorer. */
function guardCase(args: Record<string, string>): unknown {
  return {
    messages: [
      { role: 'user', content: 'Pay my rent from the file.' },
      { role: 'assistant', content: '', tool_calls: [{ name: 'read_file', arguments: { path: 'rent.txt' } }] },
      { role: 'tool', tool_name: 'read_file', content: 'Rent: 900 EUR to landlord.' },
    ],
    action: { name: 'send_money', arguments: args },
  };
}

/** The log-prob the fake gives every action token of a check tagged `req-<n>` (so each verdict shows whose scores it judged). */
const logProbOf = (tag: string) => -1 - Number(/^req-(\d+)$/.exec(tag)?.[1] ?? 0) / 8;

interface FakeWorld {
  loads: number;
  /** The runtime each fake scorer was loaded with. */
  runtimes: LocalGuardRuntime[];
  /** The tag of every request that reached a scorer, in order. */
  scored: string[];
  cancelled: string[];
  releaseHeld: Array<() => void>;
}

/** A fake scorer: the protocol and the conductor are real, the model is not. */
function fakeLoader(world: FakeWorld, load: 'ok' | 'integrity' | 'held') {
  return async (runtime: LocalGuardRuntime): Promise<LoadedScorer> => {
    world.loads += 1;
    world.runtimes.push(runtime);
    for (const file of ['config.json', 'tokenizer.json', 'onnx/model_q4.onnx']) runtime.onProgress?.({ type: 'verified', file, bytes: 10 });
    if (load === 'held') await new Promise<void>((resolve) => world.releaseHeld.push(resolve));
    if (load === 'integrity') throw new IntegrityError('model file hash mismatch for "onnx/model_q4.onnx": this may indicate tampering', { file: 'onnx/model_q4.onnx' });
    async function score(request: ScoreRequest): Promise<CheckScores> {
      const args = request.context.action.arguments as Record<string, string>;
      const tag = args['tag'] ?? '';
      world.scored.push(tag);
      if (args['mode'] === 'load') throw new ModelLoadError('cannot read model file', { file: 'config.json' });
      // What the engine throws when onnxruntime reports a lost device or exhausted memory.
      if (args['mode'] === 'device-lost') throw new DeviceLostError('GPUDevice was lost');
      if (args['mode'] === 'oom') throw new OutOfMemoryError('std::bad_alloc');
      // A run that never yields (a wedged WebGPU or wasm call): it cannot see the cancel.
      if (args['mode'] === 'wedged') await new Promise<never>(() => undefined);
      if (args['mode'] === 'hang' || args['mode'] === 'held') {
        await new Promise<void>((resolve, reject) => {
          if (args['mode'] === 'held') world.releaseHeld.push(resolve);
          request.signal?.addEventListener('abort', () => {
            world.cancelled.push(tag);
            reject(new GuardAbortedError('aborted in the fake'));
          });
        });
      }
      const value = logProbOf(tag);
      // Replacement i loses i nats per token, so the local redactor's deltas are 0, 1, 2, ...
      const sequences: Array<[string, Float64Array]> = [
        ...request.variants.map((v): [string, Float64Array] => [v.id, new Float64Array(2).fill(value)]),
        ...(request.replacements ?? []).map((r, i): [string, Float64Array] => [r.id, new Float64Array(2).fill(value - i)]),
      ];
      return { logProbs: new Map(sequences), layout: { user: [], tools: [], toolResults: [] }, truncation: { droppedToolDefinitions: false, shortenedMessages: {} } };
    }
    return { scorer: { info: INFO, score, dispose: async () => undefined }, modelOptions: null };
  };
}

interface Harness {
  world: FakeWorld;
  /** The worker side of each channel created, newest last. */
  workerPorts: MessagePort[];
  progress: GuardProgress[];
  guard: WorkerGuard;
}

const open: WorkerGuard[] = [];

function harness(options: { load?: 'ok' | 'integrity' | 'held'; guard?: CreateGuardOptions; singleWorker?: boolean; stuckWorkerGraceMs?: number } = {}): Harness {
  const world: FakeWorld = { loads: 0, runtimes: [], scored: [], cancelled: [], releaseHeld: [] };
  const workerPorts: MessagePort[] = [];
  const progress: GuardProgress[] = [];
  const makeWorker = () => {
    const { port1, port2 } = new MessageChannel();
    workerPorts.push(port2);
    serveWorkerScorer(port2, { loadScorer: fakeLoader(world, options.load ?? 'ok'), isNode: true, isWorkerThread: false });
    return port1;
  };
  const createOptions: CreateGuardOptions = {
    ...options.guard,
    worker: options.singleWorker ? makeWorker() : makeWorker,
    modelDir: '/fake/model',
    onProgress: (e) => progress.push(e),
    ...(options.stuckWorkerGraceMs !== undefined ? { stuckWorkerGraceMs: options.stuckWorkerGraceMs } : {}),
  };
  const guard = createGuard(createOptions);
  open.push(guard);
  return { world, workerPorts, progress, guard };
}

afterEach(async () => {
  await Promise.all(open.splice(0).map((g) => g.dispose()));
});

const MODEL = { reason: 'model' };
const tagOf = (verdict: Verdict) => callLogProbPerToken(verdict.attribution);

describe('the scorer protocol over a MessageChannel', () => {
  it('resolves ready with the status of the scorer the worker loaded and delivers progress events in order', async () => {
    const h = harness();
    await expect(h.guard.ready).resolves.toMatchObject({ state: 'ready', backend: 'node', model: 'fake-proxy', variant: 'q4', maxContextTokens: 1024, scoring: 'prefix', attention: false });
    expect(h.progress.map((e) => (e.type === 'verified' ? `verified:${e.file}` : e.type))).toEqual([
      'verified:config.json',
      'verified:tokenizer.json',
      'verified:onnx/model_q4.onnx',
      'session',
      'ready',
    ]);
  });

  it('rebuilds an error thrown by the scorer in the worker with its class, code and details, and answers the check with the failure policy', async () => {
    const h = harness();
    const verdict = await h.guard.check(guardCase({ mode: 'load' }));
    expect(verdict).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'model-load-failed', name: 'ModelLoadError' } });
  });

  it('rejects ready with an IntegrityError when the model fails its hash check, and answers checks with the failure policy', async () => {
    const h = harness({ load: 'integrity' });
    const error = await h.guard.ready.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(IntegrityError);
    expect(error).toMatchObject({ code: 'integrity-mismatch', details: { file: 'onnx/model_q4.onnx' } });
    expect((error as Error).message).toContain('tampering');
    const verdict = await h.guard.check(guardCase({ tag: 'after-load-failure' }));
    expect(verdict).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'integrity-mismatch' } });
  });

  it('rejects invalid input on the page while the model is still loading, and answers valid input once it has loaded', async () => {
    const h = harness({ load: 'held' });
    await expect(h.guard.check({ messages: 'nope', action: { name: 'x' } })).rejects.toBeInstanceOf(InvalidInputError);
    const pending = h.guard.check(guardCase({ tag: 'req-3' }));
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(1));
    h.world.releaseHeld[0]!();
    expect(tagOf(await pending)).toBe(logProbOf('req-3'));
  });

  it('hands the runtime options to the worker under the names the caller used, and the guard options to nobody there', async () => {
    const h = harness({ guard: { modelVariant: 'fp32', scoring: 'naive', maxBatchTokens: 512, chatTemplate: '{{ messages }}', tau: 0.2 } });
    await h.guard.ready;
    const runtime = h.world.runtimes[0]!;
    expect(runtime).toMatchObject({ modelVariant: 'fp32', scoring: 'naive', maxBatchTokens: 512, chatTemplate: '{{ messages }}', backends: ['node', 'wasm'] });
    expect(runtime).not.toHaveProperty('tau');
  });

  it('rejects invalid input with an InvalidInputError on the page, naming the field, and sends the worker nothing', async () => {
    const h = harness();
    await h.guard.ready;
    await expect(h.guard.check({ messages: 'nope', action: { name: 'x' } })).rejects.toBeInstanceOf(InvalidInputError);
    const cyclic: Record<string, unknown> = { name: 'send_money' };
    cyclic['arguments'] = { self: cyclic };
    await expect(h.guard.check({ ...(guardCase({}) as object), action: cyclic })).rejects.toMatchObject({ code: 'invalid-input' });
    const withFunction = { ...(guardCase({}) as object), action: { name: 'send_money', arguments: { callback: () => 1 } } };
    await expect(h.guard.check(withFunction)).rejects.toMatchObject({ name: 'InvalidInputError', code: 'invalid-input', details: { where: 'input.action.arguments.callback' } });
    expect(h.world.scored).toEqual([]);
  });

  it('gives each of many concurrent checks the verdict of its own scores', async () => {
    const h = harness();
    const tags = Array.from({ length: 20 }, (_, i) => `req-${i}`);
    const verdicts = await Promise.all(tags.map((tag) => h.guard.check(guardCase({ tag }))));
    expect(verdicts.map(tagOf)).toEqual(tags.map(logProbOf));
  });

  it('sends every check to the worker at once, which runs them one at a time, each answered with its own verdict', async () => {
    const h = harness();
    const pending = ['req-1', 'req-2', 'req-3'].map((tag) => h.guard.check(guardCase({ tag, mode: 'held' })));
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(1));
    for (let i = 0; i < 3; i++) {
      await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(i + 1));
      h.world.releaseHeld[i]!();
    }
    expect((await Promise.all(pending)).map(tagOf)).toEqual(['req-1', 'req-2', 'req-3'].map(logProbOf));
  });

  it('rejects an aborted check with GuardAbortedError and cancels it in the worker', async () => {
    const h = harness();
    await h.guard.ready;
    const controller = new AbortController();
    const pending = h.guard.check(guardCase({ tag: 'slow', mode: 'held' }), { signal: controller.signal });
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(1));
    controller.abort();
    await expect(pending).rejects.toBeInstanceOf(GuardAbortedError);
    await vi.waitFor(() => expect(h.world.cancelled).toEqual(['slow']));
    expect(tagOf(await h.guard.check(guardCase({ tag: 'req-4' })))).toBe(logProbOf('req-4'));
    expect(h.world.loads).toBe(1);
  });

  it('rejects at once when the signal is already aborted', async () => {
    const h = harness();
    const controller = new AbortController();
    controller.abort();
    await expect(h.guard.check(guardCase({ tag: 'x' }), { signal: controller.signal })).rejects.toMatchObject({ code: 'aborted' });
  });

  it('answers a check that outlives timeoutMs with a failure-policy verdict and cancels it in the worker', async () => {
    const h = harness({ guard: { timeoutMs: SHORT_TIMEOUT_MS } });
    await h.guard.ready;
    const verdict = await h.guard.check(guardCase({ tag: 'stuck', mode: 'hang' }));
    expect(verdict).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'timeout' } });
    await vi.waitFor(() => expect(h.world.cancelled).toEqual(['stuck']));
    // The worker stopped the call, so it is kept: the next check is answered by the same one.
    expect(await h.guard.check(guardCase({ tag: 'req-5' }))).toMatchObject(MODEL);
    expect(h.world.loads).toBe(1);
  });

  it('terminates a worker that cannot stop a timed-out call and answers the next call from a new one', async () => {
    const h = harness({ guard: { timeoutMs: SHORT_TIMEOUT_MS }, stuckWorkerGraceMs: 50 });
    await h.guard.ready;
    const terminated = new Promise((resolve) => h.workerPorts[0]!.once('close', resolve));
    const verdict = await h.guard.check(guardCase({ tag: 'wedged', mode: 'wedged' }));
    expect(verdict).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'timeout' } });
    await terminated;
    expect(await h.guard.check(guardCase({ tag: 'req-6' }))).toMatchObject(MODEL);
    expect(h.world.loads).toBe(2);
    expect(h.workerPorts).toHaveLength(2);
  });

  it.each([
    ['device-lost', 'device-lost'],
    ['oom', 'out-of-memory'],
  ])('answers a %s failure with the failure policy and replaces the worker for the next call', async (mode, code) => {
    const h = harness();
    await h.guard.ready;
    const verdict = await h.guard.check(guardCase({ tag: 'gpu', mode }));
    expect(verdict).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code } });
    expect(await h.guard.check(guardCase({ tag: 'req-7' }))).toMatchObject(MODEL);
    expect(h.world.loads).toBe(2);
  });

  it('keeps the worker after an ordinary model failure', async () => {
    const h = harness();
    await h.guard.ready;
    expect(await h.guard.check(guardCase({ tag: 'x', mode: 'load' }))).toMatchObject({ reason: 'failure-policy', error: { code: 'model-load-failed' } });
    expect(await h.guard.check(guardCase({ tag: 'req-8' }))).toMatchObject(MODEL);
    expect(h.world.loads).toBe(1);
  });

  it("keeps no reference to an answered call's verdict (calls do not wait on promises that never settle)", async () => {
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const h = harness();
    await h.guard.ready;
    let verdict: Verdict | null = await h.guard.check(guardCase({ tag: 'req-9' }));
    const ref = new WeakRef(verdict);
    expect(ref.deref()).toMatchObject(MODEL);
    verdict = null;
    for (let i = 0; i < 5 && ref.deref() !== undefined; i++) {
      await new Promise((r) => setImmediate(r));
      gc();
    }
    expect(ref.deref()).toBeUndefined();
  });

  it('refuses a negative or non-finite stuckWorkerGraceMs', () => {
    expect(() => createGuard({ modelDir: '/m', worker: () => new MessageChannel().port1, stuckWorkerGraceMs: -1 })).toThrow(/stuckWorkerGraceMs: received -1/);
    expect(() => createGuard({ modelDir: '/m', worker: () => new MessageChannel().port1, stuckWorkerGraceMs: Number.NaN })).toThrow(/stuckWorkerGraceMs/);
  });

  it('lets a timed-out call through only when onError is "allow"', async () => {
    const h = harness({ guard: { timeoutMs: SHORT_TIMEOUT_MS, onError: 'allow' } });
    const verdict = await h.guard.check(guardCase({ tag: 'stuck', mode: 'hang' }));
    expect(verdict).toMatchObject({ decision: 'allow', reason: 'failure-policy', error: { code: 'timeout' } });
  });

  /** Two held checks on the first worker, which dies: they are re-sent and held again in the second. */
  async function heldThroughOneDeath(h: Harness): Promise<Array<Promise<Verdict>>> {
    await h.guard.ready;
    const pending = ['req-10', 'req-11'].map((tag) => h.guard.check(guardCase({ tag, mode: 'held' })));
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(1));
    h.workerPorts[0]!.close();
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(2));
    return pending;
  }

  it('sends every pending check to a new worker when the worker dies, and answers them from there', async () => {
    const h = harness();
    const pending = await heldThroughOneDeath(h);
    h.world.releaseHeld[1]!();
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(3));
    h.world.releaseHeld[2]!();
    expect((await Promise.all(pending)).map(tagOf)).toEqual(['req-10', 'req-11'].map(logProbOf));
    expect(h.world.loads).toBe(2);
    expect(h.workerPorts).toHaveLength(2);
  });

  it('answers a check with the failure policy (WorkerCrashedError) when its worker dies twice, then restarts on the next call', async () => {
    const h = harness();
    const pending = await heldThroughOneDeath(h);
    h.workerPorts[1]!.close();
    for (const verdict of await Promise.all(pending)) {
      expect(verdict).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'worker-crashed', name: 'WorkerCrashedError' } });
    }
    expect(await h.guard.check(guardCase({ tag: 'req-12' }))).toMatchObject(MODEL);
    expect(h.world.loads).toBe(3);
    expect(h.workerPorts).toHaveLength(3);
  });

  it('rejects ready with WorkerCrashedError when the worker dies while loading, and loads again on a new worker for the checks', async () => {
    const h = harness({ load: 'held' });
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(1));
    const pending = h.guard.check(guardCase({ tag: 'req-13' }));
    h.workerPorts[0]!.close();
    await expect(h.guard.ready).rejects.toMatchObject({ code: 'worker-crashed' });
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(2));
    h.world.releaseHeld[1]!();
    expect(tagOf(await pending)).toBe(logProbOf('req-13'));
    expect((await h.guard.status()).state).toBe('ready');
    expect(h.world.loads).toBe(2);
  });

  it('cannot restart a single Worker instance and says so with WorkerCrashedError', async () => {
    const h = harness({ singleWorker: true });
    await h.guard.ready;
    h.workerPorts[0]!.close();
    await vi.waitFor(() => expect(h.guard.check(guardCase({ tag: 'x' }))).resolves.toMatchObject({ reason: 'failure-policy', error: { code: 'worker-crashed', message: expect.stringMatching(/pass a factory/) } }));
  });

  it('rejects in-flight and later calls with DisposedError after dispose', async () => {
    const h = harness();
    await h.guard.ready;
    const inFlight = expect(h.guard.check(guardCase({ tag: 'late', mode: 'hang' }))).rejects.toBeInstanceOf(DisposedError);
    await vi.waitFor(() => expect(h.world.scored).toEqual(['late']));
    await h.guard.dispose();
    await inFlight;
    await expect(h.guard.check(guardCase({ tag: 'x' }))).rejects.toBeInstanceOf(DisposedError);
    expect((await h.guard.status()).state).toBe('disposed');
  });

  it('disposes a guard whose worker never finishes loading, and answers its waiting check with DisposedError', async () => {
    const h = harness({ load: 'held', stuckWorkerGraceMs: 50 });
    const waiting = expect(h.guard.check(guardCase({ tag: 'waiting' }))).rejects.toBeInstanceOf(DisposedError);
    await vi.waitFor(() => expect(h.world.releaseHeld).toHaveLength(1));
    await h.guard.dispose();
    await waiting;
  });

  it('scores sentence ablations in the worker as replacements of one request, for the local redactor', async () => {
    const h = harness();
    await expect(h.guard.scoreSentenceAblations(guardCase({}), 2, ['a', 'b', 'c'])).resolves.toEqual([0, 1, 2]);
  });
});

describe('backend plan', () => {
  it('falls back to wasm and says navigator.gpu is undefined when there is no WebGPU', async () => {
    await expect(planBackends('auto', { isNode: false, gpu: undefined })).resolves.toEqual({ backends: ['wasm'], fallbackReason: 'WebGPU: navigator.gpu is undefined' });
  });

  it('falls back to wasm and says requestAdapter() returned null when there is no adapter', async () => {
    const gpu = { requestAdapter: async () => null };
    await expect(planBackends('auto', { isNode: false, gpu })).resolves.toEqual({ backends: ['wasm'], fallbackReason: 'WebGPU: navigator.gpu.requestAdapter() returned null' });
  });

  it('tries WebGPU then wasm when an adapter exists, and onnxruntime-node then wasm in Node', async () => {
    await expect(planBackends('auto', { isNode: false, gpu: { requestAdapter: async () => ({}) } })).resolves.toEqual({ backends: ['webgpu', 'wasm'], fallbackReason: null });
    await expect(planBackends('auto', { isNode: true, gpu: undefined })).resolves.toEqual({ backends: ['node', 'wasm'], fallbackReason: null });
    // Inside a worker thread onnxruntime-node is never used: terminating the worker mid-run would abort the host.
    for (const preference of ['auto', 'node'] as const) {
      await expect(planBackends(preference, { isNode: true, isWorkerThread: true, gpu: undefined })).resolves.toMatchObject({ backends: ['wasm'], fallbackReason: NATIVE_IN_WORKER_THREAD_REASON });
    }
    await expect(planBackends('wasm', { isNode: true, isWorkerThread: true, gpu: undefined })).resolves.toEqual({ backends: ['wasm'], fallbackReason: null });
  });

  it('refuses an explicit WebGPU request without an adapter, and the node backend in a browser', async () => {
    await expect(planBackends('webgpu', { isNode: false, gpu: undefined })).rejects.toMatchObject({ code: 'backend-unavailable' });
    await expect(planBackends('node', { isNode: false, gpu: undefined })).rejects.toMatchObject({ code: 'invalid-options' });
  });
});
