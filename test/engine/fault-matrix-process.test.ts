/**
 * The fault matrix on the native child-process backend: createNodeGuard's `isolation:
 * 'process'` scorer, onnxruntime-node in a real child process, on the tiny model. The child is killed
 * (SIGKILL), aborts in native code (SIGABRT), wedges in a run that never reads its cancel (SIGSTOP, then
 * the deadline), the model file is tampered, the caller aborts, the guard is disposed: each alone and
 * with two other calls in flight. Every promise settles, no privileged call is allowed by a failure, the
 * host lives, and the next check gets a model verdict from a fresh child (or, for a tampered model or a
 * disposed guard, the same refusal again).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConductor, type LocalGuard } from '../../src/core/conductor.js';
import type { Verdict } from '../../src/core/verdict.js';
import { loadProcessScorer } from '../../src/engine/process-scorer.js';
import { SLOW, SMALL } from '../fault-cases.js';
import { settle as settleWithin, tamperedCopy } from './fault-helpers.js';
import { makeTinyGuardModel, TINY_GUARD_MODEL_AVAILABLE } from './tiny-guard-model.js';

// Each promise must settle within this; pending longer is a hang.
const HANG_MS = 20_000;
const CELL_TIMEOUT_MS = 40_000;
const SETUP_TIMEOUT_MS = 60_000;
// The wedge cell's limit: a stopped child never answers, so the deadline decides; the next child's start fits in it.
const SHORT_TIMEOUT_MS = 2_000;

const settle = (p: Promise<Verdict>) => settleWithin(p, HANG_MS);

type Fault = 'killed' | 'native-abort' | 'wedged' | 'tampered' | 'abort' | 'dispose';
const FAULTS: Fault[] = ['killed', 'native-abort', 'wedged', 'tampered', 'abort', 'dispose'];

/** What the call the fault lands on gets. */
const EXPECTED: Record<Fault, object> = {
  killed: { kind: 'verdict', verdict: { decision: 'block', reason: 'failure-policy', error: { code: 'worker-crashed' } } },
  'native-abort': { kind: 'verdict', verdict: { decision: 'block', reason: 'failure-policy', error: { code: 'worker-crashed' } } },
  wedged: { kind: 'verdict', verdict: { decision: 'block', reason: 'failure-policy', error: { code: 'timeout' } } },
  tampered: { kind: 'verdict', verdict: { decision: 'block', reason: 'failure-policy', error: { code: 'integrity-mismatch' } } },
  abort: { kind: 'rejected', code: 'aborted' },
  dispose: { kind: 'rejected', code: 'disposed' },
};

describe.skipIf(!TINY_GUARD_MODEL_AVAILABLE)("fault matrix on the child-process backend (isolation: 'process')", () => {
  let modelDir: string;
  let tamperedDir: string;
  const open: LocalGuard[] = [];

  beforeAll(async () => {
    modelDir = await makeTinyGuardModel();
    tamperedDir = tamperedCopy(modelDir);
  }, SETUP_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(open.map((g) => g.dispose()));
  });

  for (const fault of FAULTS) {
    for (const others of [0, 2]) {
      it(`${fault}${others ? ` with ${others} other calls in flight` : ''}: every promise settles, no privileged call is allowed, the next check is answered`, async () => {
        const pids: number[] = [];
        const controller = new AbortController();
        let guard: LocalGuard | null = null;
        // The fault lands on the first call, right after its request reached the child.
        const onScoreSent = (pid: number) => {
          pids.push(pid);
          if (pids.length > 1) return;
          if (fault === 'killed') process.kill(pid, 'SIGKILL');
          if (fault === 'native-abort') process.kill(pid, 'SIGABRT');
          if (fault === 'wedged') process.kill(pid, 'SIGSTOP');
          if (fault === 'abort') controller.abort();
          if (fault === 'dispose') void guard?.dispose();
        };
        const dir = fault === 'tampered' ? tamperedDir : modelDir;
        guard = createConductor(fault === 'wedged' ? { timeoutMs: SHORT_TIMEOUT_MS } : {}, {
          load: () => loadProcessScorer({ location: { modelDir: dir }, runtime: {}, backends: ['node'], onScoreSent }),
        });
        open.push(guard);
        await guard.ready.catch(() => undefined);
        const target = settle(guard.check(SLOW, { signal: controller.signal }));
        const neighbours = Array.from({ length: others }, () => settle(guard.check(SLOW)));
        const all = [await target, ...(await Promise.all(neighbours))];

        for (const s of all) {
          expect(s.kind).not.toBe('hang');
          // A failure never allows a privileged call: it blocks, or rejects with the caller's own abort or dispose.
          if (s.kind === 'verdict' && s.verdict.reason !== 'model') expect(s.verdict).toMatchObject({ decision: 'block', reason: 'failure-policy' });
          if (s.kind === 'rejected') expect(['aborted', 'disposed']).toContain(s.code);
        }
        expect(all[0]).toMatchObject(EXPECTED[fault]);
        // The calls behind a killed or crashed child are scored by the next one, never failed for its fault.
        if (fault === 'killed' || fault === 'native-abort' || fault === 'abort') for (const s of all.slice(1)) expect(s).toMatchObject({ kind: 'verdict', verdict: { reason: 'model' } });
        if (fault === 'tampered' || fault === 'dispose') for (const s of all) expect(s).toMatchObject(EXPECTED[fault]);

        let next = await settle(guard.check(SMALL));
        // A check issued while the wedged child is still being killed (2 s after its cancel) can time out too; the next child catches up.
        for (let retry = 0; fault === 'wedged' && retry < 3 && next.kind === 'verdict' && next.verdict.error?.code === 'timeout'; retry++) next = await settle(guard.check(SMALL));
        if (fault === 'dispose') expect(next).toEqual({ kind: 'rejected', code: 'disposed' });
        else if (fault === 'tampered') expect(next).toMatchObject(EXPECTED.tampered);
        else expect(next).toMatchObject({ kind: 'verdict', verdict: { reason: 'model', backend: 'node-process' } });
        // A dead or wedged child is replaced: the next check ran in a new one; an abort keeps the child.
        if (fault === 'killed' || fault === 'native-abort' || fault === 'wedged') expect(pids[pids.length - 1]).not.toBe(pids[0]);
        if (fault === 'abort') expect(new Set(pids).size).toBe(1);
      }, CELL_TIMEOUT_MS);
    }
  }
});
