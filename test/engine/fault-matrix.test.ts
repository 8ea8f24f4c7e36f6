/**
 * The fault matrix through the worker API: worker killed, worker throws, model file
 * tampered, GPU device lost (simulated: no GPU here, so the worker's first check answers as the engine
 * does when onnxruntime reports a lost device), abort, timeout and dispose mid-check, each alone and with
 * two other calls in flight.
 * Every promise settles (none outlives its hang guard), a privileged call is never allowed by a
 * failure (a failure-policy block under the default policy, or the caller's own abort/dispose
 * rejection), and the next check works. The real worker scorer host and engine on the tiny model run
 * behind a MessageChannel (test/engine/worker-kill.test.ts kills real worker threads).
 */
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuard, type WorkerGuard } from '../../src/page/create-guard.js';
import { serveWorkerScorer, type WorkerScorerDeps } from '../../src/worker/service.js';
import { DeviceLostError } from '../../src/core/errors.js';
import type { Scorer } from '../../src/core/scorer-port.js';
import type { Verdict } from '../../src/core/verdict.js';
import { loadEngineScorer } from '../../src/engine/local-guard.js';
import { createNodeGuard } from '../../src/node.js';
import { makeTinyGuardModel, TINY_GUARD_MODEL_AVAILABLE } from './tiny-guard-model.js';
import { SLOW, SMALL } from '../fault-cases.js';
import { settle as settleWithin, tamperedCopy } from './fault-helpers.js';

// Each promise must settle within this; pending longer is a hang.
const HANG_MS = 20_000;
const CELL_TIMEOUT_MS = 30_000;
const SETUP_TIMEOUT_MS = 60_000;
// The timeout cell's limit: far below the slow case's scoring, far above a small check's round trip.
const SHORT_TIMEOUT_MS = 150;
// When the fault lands: the slow case is still tokenizing its long result by then.
const FAULT_DELAY_MS = 30;

const settle = (p: Promise<Verdict>) => settleWithin(p, HANG_MS);

interface Rig {
  guard: WorkerGuard;
  /** The client side of each worker started, newest last. */
  clientPorts: MessagePort[];
  workerPorts: MessagePort[];
}

/**
 * The first worker's scorer loses its GPU device on its first request: it fails as the engine does when
 * onnxruntime reports a lost device (DeviceLostError); the scorer runs on as the real one otherwise. Later
 * workers are healthy.
 */
function losesDeviceOnce(workerNumber: number): NonNullable<WorkerScorerDeps['loadScorer']> {
  return async (runtime) => {
    const loaded = await loadEngineScorer(runtime);
    const real = loaded.scorer;
    let lost = workerNumber > 0;
    const scorer: Scorer = {
      info: real.info,
      dispose: () => real.dispose(),
      async score(request) {
        if (lost) return real.score(request);
        lost = true;
        await new Promise((resolve) => setTimeout(resolve, 2 * FAULT_DELAY_MS));
        throw new DeviceLostError('The webgpu device was lost during inference (GPUDevice was lost; simulated)');
      },
    };
    return { ...loaded, scorer };
  };
}

function rig(modelDir: string, timeoutMs?: number, deviceLoss = false): Rig {
  const clientPorts: MessagePort[] = [];
  const workerPorts: MessagePort[] = [];
  const guard = createGuard({
    modelDir,
    worker: () => {
      const { port1, port2 } = new MessageChannel();
      const deps = { isNode: true, isWorkerThread: false, ...(deviceLoss ? { loadScorer: losesDeviceOnce(clientPorts.length) } : {}) };
      clientPorts.push(port1);
      workerPorts.push(port2);
      serveWorkerScorer(port2, deps);
      return port1;
    },
    // The default stuckWorkerGraceMs: a worker that stops a cancelled call in time is kept (grace 0 is worker-kill.test.ts's).
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
  });
  return { guard, clientPorts, workerPorts };
}

/**
 * The timeout cell's target: six long results (six spans, their groups, each a window's worth once cut).
 * SLOW alone now scores within the cell's 150 ms on a fast run (the core cuts its text first, and passes
 * are smaller), so its timeout was no longer certain.
 */
const SLOWER = { ...SLOW, messages: [...SLOW.messages, ...Array.from({ length: 5 }, (_, i) => [{ role: 'assistant', content: '', tool_calls: [{ name: 'read_file', arguments: { path: `rent-${i}.txt` } }] }, { ...SLOW.messages[2]!, content: `Statement ${i}. ${SLOW.messages[2]!.content}` }]).flat()] };

type Fault = 'killed' | 'throws' | 'tampered' | 'device-lost' | 'abort' | 'timeout' | 'dispose';
const FAULTS: Fault[] = ['killed', 'throws', 'tampered', 'device-lost', 'abort', 'timeout', 'dispose'];

describe.skipIf(!TINY_GUARD_MODEL_AVAILABLE)('fault matrix through the worker API', () => {
  let modelDir: string;
  let tamperedDir: string;
  const open: WorkerGuard[] = [];

  beforeAll(async () => {
    modelDir = await makeTinyGuardModel();
    tamperedDir = tamperedCopy(modelDir);
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(open.map((g) => g.dispose()));
  });

  for (const fault of FAULTS) {
    for (const others of [0, 2]) {
      it(`${fault}${others ? ` with ${others} other calls in flight` : ''}: every promise settles, no privileged call is allowed, the next check works`, async () => {
        const r = rig(fault === 'tampered' ? tamperedDir : modelDir, fault === 'timeout' ? SHORT_TIMEOUT_MS : undefined, fault === 'device-lost');
        open.push(r.guard);
        await r.guard.ready.catch(() => undefined);
        const controller = new AbortController();
        const target = settle(r.guard.check(fault === 'timeout' ? SLOWER : SLOW, { signal: controller.signal }));
        const neighbours = Array.from({ length: others }, () => settle(r.guard.check(SLOW)));
        await new Promise((resolve) => setTimeout(resolve, FAULT_DELAY_MS));
        if (fault === 'killed') r.workerPorts[0]!.close();
        if (fault === 'throws') r.clientPorts[0]!.emit('error', new Error('simulated uncaught error in the worker'));
        if (fault === 'abort') controller.abort();
        if (fault === 'dispose') void r.guard.dispose();
        const all = [await target, ...(await Promise.all(neighbours))];

        for (const s of all) {
          expect(s.kind).not.toBe('hang');
          // A failure never allows a privileged call: it blocks, or rejects with the caller's own abort/dispose.
          if (s.kind === 'verdict' && s.verdict.reason !== 'model') expect(s.verdict).toMatchObject({ decision: 'block', reason: 'failure-policy' });
          if (s.kind === 'rejected') expect(['aborted', 'disposed']).toContain(s.code);
        }
        // A call in flight when its worker dies is sent once more to a fresh worker: the model answers it.
        const expected: Record<Fault, object> = {
          killed: { kind: 'verdict', verdict: { reason: 'model' } },
          throws: { kind: 'verdict', verdict: { reason: 'model' } },
          tampered: { kind: 'verdict', verdict: { decision: 'block', error: { code: 'integrity-mismatch' } } },
          'device-lost': { kind: 'verdict', verdict: { decision: 'block', reason: 'failure-policy', error: { code: 'device-lost' } } },
          abort: { kind: 'rejected', code: 'aborted' },
          timeout: { kind: 'verdict', verdict: { decision: 'block', error: { code: 'timeout' } } },
          dispose: { kind: 'rejected', code: 'disposed' },
        };
        expect(all[0]).toMatchObject(expected[fault]);
        if (fault === 'killed' || fault === 'throws' || fault === 'tampered' || fault === 'dispose') for (const s of all) expect(s).toMatchObject(expected[fault]);
        if (fault === 'killed' || fault === 'throws') expect(r.clientPorts.length).toBe(2);

        let next = await settle(r.guard.check(SMALL));
        // Under timeoutMs 150 on a loaded machine, a check queued behind the cancelled calls' last inference run can time out too; the worker catches up.
        for (let retry = 0; fault === 'timeout' && retry < 3 && next.kind === 'verdict' && next.verdict.error?.code === 'timeout'; retry++) next = await settle(r.guard.check(SMALL));
        if (fault === 'dispose') expect(next).toEqual({ kind: 'rejected', code: 'disposed' });
        // A tampered model stays refused: every later check is blocked by the policy, none hangs.
        else if (fault === 'tampered') expect(next).toMatchObject(expected.tampered);
        else expect(next).toMatchObject({ kind: 'verdict', verdict: { reason: 'model' } });
        // A lost device retires its worker: the next check ran on a new one.
        if (fault === 'device-lost') expect(r.clientPorts.length).toBeGreaterThanOrEqual(2);
      }, CELL_TIMEOUT_MS);
    }
  }
});

/**
 * The first worker's scorer wedges on its first request: it never answers and never reads a cancel (a
 * WebGPU or wasm run that does not yield), and every later request waits behind it in the worker's queue,
 * as behind a real inference run.
 */
function wedgesOnce(workerNumber: number): NonNullable<WorkerScorerDeps['loadScorer']> {
  return async (runtime) => {
    const loaded = await loadEngineScorer(runtime);
    if (workerNumber > 0) return loaded;
    const real = loaded.scorer;
    let wedged = false;
    const scorer: Scorer = {
      info: real.info,
      dispose: () => real.dispose(),
      score(request) {
        if (wedged) return real.score(request);
        wedged = true;
        return new Promise<never>(() => undefined);
      },
    };
    return { ...loaded, scorer };
  };
}

describe.skipIf(!TINY_GUARD_MODEL_AVAILABLE)('calls waiting behind a wedged or crashed call', () => {
  let modelDir: string;
  beforeAll(async () => {
    modelDir = await makeTinyGuardModel();
  }, SETUP_TIMEOUT_MS);

  it('a call queued behind an aborted call that wedged its worker is re-sent to a fresh worker and gets a model verdict', async () => {
    const clientPorts: MessagePort[] = [];
    const guard = createGuard({
      modelDir,
      stuckWorkerGraceMs: 50,
      worker: () => {
        const { port1, port2 } = new MessageChannel();
        serveWorkerScorer(port2, { isNode: true, isWorkerThread: false, loadScorer: wedgesOnce(clientPorts.length) });
        clientPorts.push(port1);
        return port1;
      },
    });
    try {
      await guard.ready;
      const controller = new AbortController();
      const wedged = settle(guard.check(SMALL, { signal: controller.signal }));
      const queued = settle(guard.check(SMALL));
      await new Promise((resolve) => setTimeout(resolve, FAULT_DELAY_MS));
      controller.abort();
      expect(await wedged).toEqual({ kind: 'rejected', code: 'aborted' });
      // The watchdog replaced the wedged worker; the queued call was not failed for the aborted one's fault.
      expect(await queued).toMatchObject({ kind: 'verdict', verdict: { reason: 'model' } });
      expect(clientPorts.length).toBe(2);
    } finally {
      await guard.dispose();
    }
  }, CELL_TIMEOUT_MS);

  it('a call whose worker dies twice gets the failure policy (blocked), and the guard still answers the next one', async () => {
    const workerPorts: MessagePort[] = [];
    const guard = createGuard({
      modelDir,
      worker: () => {
        const { port1, port2 } = new MessageChannel();
        serveWorkerScorer(port2, { isNode: true, isWorkerThread: false });
        workerPorts.push(port2);
        return port1;
      },
    });
    try {
      await guard.ready;
      const call = settle(guard.check(SLOW));
      // Each worker the call reaches dies under it.
      for (let n = 1; n <= 2; n++) {
        while (workerPorts.length < n) await new Promise((resolve) => setTimeout(resolve, 5));
        await new Promise((resolve) => setTimeout(resolve, FAULT_DELAY_MS));
        workerPorts[n - 1]!.close();
      }
      expect(await call).toMatchObject({ kind: 'verdict', verdict: { decision: 'block', reason: 'failure-policy', error: { code: 'worker-crashed' } } });
      expect(await settle(guard.check(SMALL))).toMatchObject({ kind: 'verdict', verdict: { reason: 'model' } });
      expect(workerPorts.length).toBe(3);
    } finally {
      await guard.dispose();
    }
  }, CELL_TIMEOUT_MS);
});

describe.skipIf(!TINY_GUARD_MODEL_AVAILABLE)('input that cannot be read', () => {
  it('a throwing getter or Proxy is the same InvalidInputError through the worker guard as in process', async () => {
    const modelDir = await makeTinyGuardModel();
    const inWorker = rig(modelDir).guard;
    const inProcess = createNodeGuard({ modelDir });
    const getter = {
      messages: [{ role: 'user', content: 'Pay my rent.' }],
      get action(): never {
        throw new Error('getter exploded');
      },
    };
    const proxy = new Proxy(
      {},
      {
        get() {
          throw new Error('proxy exploded');
        },
      },
    );
    try {
      for (const input of [getter, proxy]) {
        const [worker, local] = await Promise.all([settle(inWorker.check(input)), settle(inProcess.check(input))]);
        expect(worker).toEqual({ kind: 'rejected', code: 'invalid-input' });
        expect(local).toEqual(worker);
        const [error, localError] = await Promise.all([inWorker.check(input).catch((e: unknown) => e), inProcess.check(input).catch((e: unknown) => e)]);
        // Both read the input once into plain data: the getter throws naming its field; the Proxy's traps show no own keys, so it reads as {}.
        expect((error as Error).message).toMatch(input === getter ? /^input\.action: the value could not be read \(getter exploded\)/ : /^input\.messages: missing/);
        expect((error as Error).message).toBe((localError as Error).message);
      }
      // The worker still answers.
      expect(await settle(inWorker.check(SMALL))).toMatchObject({ kind: 'verdict', verdict: { reason: 'model' } });
    } finally {
      await inWorker.dispose();
      await inProcess.dispose();
    }
  }, CELL_TIMEOUT_MS);
});
