/**
 * The prefix scorer's plan, without onnxruntime: which sequence continues which one's cache from which
 * token, in which round, how a round's rows group into passes under the byte budget, and how a long row
 * splits into chunks. (test/engine/prefix-scorer.test.ts runs the plan on the tiny model.)
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_MAX_BATCH_BYTES, defaultBatchBytes, minimumBudgetBytes, passBytes, planChunks, planPasses, planSharing, trieMinimumTokens, type PassBudget } from '../../src/engine/prefix-plan.js';
import type { ModelDims } from '../../src/engine/scorer.js';

// The tiny-proxy fixture's shape (test/fixtures/tiny-proxy/config.json).
const DIMS: ModelDims = { numLayers: 2, numKeyValueHeads: 2, headDim: 16, numHeads: 4, vocabSize: 4096, padTokenId: 2, hiddenSize: 64, intermediateSize: 128 };

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

/** A leave-one-out check as token sequences: full = system + user + result + action; no-user and no-span drop a part. */
function leaveOneOut() {
  const system = range(100, 10);
  const user = range(200, 8);
  const result = range(300, 12);
  const action = [7, 8, 9];
  return [
    { context: [...system, ...user, ...result], action },
    { context: [...system, ...result], action },
    { context: [...system, ...user], action },
  ];
}

describe('planSharing', () => {
  it('computes full first, then each branch one round later from where it leaves full', () => {
    const plan = planSharing(leaveOneOut());
    expect(plan.order).toEqual([0, 1, 2]);
    expect(plan.partner).toEqual([-1, 0, 0]);
    // no-user diverges after the system prompt; no-span after system + user, less its last context token,
    // whose logits predict the first action token (full's cache holds no logits).
    expect(plan.start).toEqual([0, 10, 17]);
    expect(plan.round).toEqual([0, 1, 1]);
    expect(plan.rounds).toBe(2);
    expect(plan.dependents).toEqual([2, 0, 0]);
    expect(plan.alias).toEqual([-1, -1, -1]);
  });

  it('computes exactly the token trie when no context is a prefix of another sequence', () => {
    const sequences = leaveOneOut().slice(0, 2);
    const plan = planSharing(sequences);
    const computed = plan.full.reduce((a, s, i) => a + s.length - plan.start[i]!, 0);
    expect(computed).toBe(trieMinimumTokens(plan.full));
    expect(trieMinimumTokens([[1, 2, 3], [1, 2, 4], [1, 5]])).toBe(5);
  });

  it('reuses the result of an identical sequence, and computes one that wants attention rows from its start', () => {
    const [full] = leaveOneOut();
    const twin = planSharing([full!, { ...full! }]);
    expect(twin.alias).toEqual([-1, 0]);
    expect(twin.rounds).toBe(1);
    const attention = planSharing([full!, { context: [...full!.context.slice(0, 20), 999], action: full!.action, withAttention: true }]);
    expect(attention.start[1]).toBe(0);
    expect(attention.partner[1]).toBe(-1);
  });

  it('always computes the last context token, whose logits predict the first action token', () => {
    const plan = planSharing([
      { context: [1, 2, 3], action: [4] },
      { context: [1, 2, 3], action: [5] },
    ]);
    expect(plan.start).toEqual([0, 2]);
    expect(plan.alias).toEqual([-1, -1]);
  });

  it('plans nothing for no sequences', () => {
    expect(planSharing([])).toMatchObject({ order: [], rounds: 0 });
  });
});

describe('planPasses', () => {
  const budget = (bytes: number, maxChunk = 512): PassBudget => ({ dims: DIMS, budget: bytes, maxChunk, heldBytes: 0 });

  it('batches rows of similar length in one pass when the budget allows, shortest first', () => {
    const rows = [
      { pastLength: 18, newTokens: 15, actionLength: 3 },
      { pastLength: 10, newTokens: 14, actionLength: 3 },
    ];
    expect(planPasses(budget(DEFAULT_MAX_BATCH_BYTES), rows)).toEqual([{ kind: 'batch', rows: [1, 0] }]);
  });

  it('splits rows whose padding would waste more than a quarter of the pass', () => {
    const rows = [
      { pastLength: 0, newTokens: 4, actionLength: 3 },
      { pastLength: 0, newTokens: 40, actionLength: 3 },
    ];
    expect(planPasses(budget(DEFAULT_MAX_BATCH_BYTES), rows)).toEqual([
      { kind: 'batch', rows: [0] },
      { kind: 'batch', rows: [1] },
    ]);
  });

  it('keeps every batched pass within the budget, and sends a row too long for one pass to chunks', () => {
    const rows = range(0, 6).map(() => ({ pastLength: 100, newTokens: 60, actionLength: 3 }));
    const small = budget(passBytes(budget(0), rows.slice(0, 2)));
    const passes = planPasses(small, rows);
    expect(passes.every((p) => p.kind === 'batch' && passBytes(small, p.rows.map((i) => rows[i]!)) <= small.budget)).toBe(true);
    expect(passes.flatMap((p) => (p.kind === 'batch' ? p.rows : [p.row])).sort()).toEqual(range(0, 6));
    expect(planPasses(budget(DEFAULT_MAX_BATCH_BYTES, 32), [{ pastLength: 0, newTokens: 100, actionLength: 3 }])).toEqual([{ kind: 'chunked', row: 0 }]);
  });

  it('computes at most maxChunk new tokens (padded) in one pass however much the budget allows, since a pass blocks its thread', () => {
    const rows = range(0, 5).map(() => ({ pastLength: 300, newTokens: 100, actionLength: 3 }));
    const passes = planPasses(budget(DEFAULT_MAX_BATCH_BYTES, 256), rows);
    expect(passes).toEqual([
      { kind: 'batch', rows: [0, 1] },
      { kind: 'batch', rows: [2, 3] },
      { kind: 'batch', rows: [4] },
    ]);
  });
});

describe('planChunks', () => {
  it('cuts a long row into chunks of at most maxChunk tokens, the last one carrying every action row', () => {
    const sizes = planChunks({ dims: DIMS, budget: DEFAULT_MAX_BATCH_BYTES, maxChunk: 512, heldBytes: 0 }, { pastLength: 0, newTokens: 1300, actionLength: 20 });
    expect(sizes).toEqual([512, 512, 276]);
  });

  it('shrinks chunks to fit a tight budget, never below the per-pass floor or the action rows', () => {
    const row = { pastLength: 200, newTokens: 600, actionLength: 10 };
    const least = minimumBudgetBytes(DIMS, 800, 10);
    const sizes = planChunks({ dims: DIMS, budget: least, maxChunk: 512, heldBytes: 0 }, row);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(600);
    expect(sizes.at(-1)).toBeGreaterThanOrEqual(11);
    expect(Math.min(...sizes.slice(0, -1))).toBeGreaterThanOrEqual(64);
    expect(sizes.length).toBeGreaterThan(2);
  });

  it('defaults to 64 MiB when a check fits it, and to one full chunk at the longest sequence when it cannot', () => {
    expect(defaultBatchBytes(DIMS, 1000, 20)).toBe(DEFAULT_MAX_BATCH_BYTES);
    const big: ModelDims = { ...DIMS, numLayers: 32, numKeyValueHeads: 8, headDim: 128, numHeads: 32, hiddenSize: 4096, intermediateSize: 14336 };
    expect(defaultBatchBytes(big, 8000, 20)).toBeGreaterThan(minimumBudgetBytes(big, 8000, 20));
  });
});
