import { describe, expect, it } from 'vitest';
import type { CheckScores } from '../../src/core/judge.js';
import { transferables, type ScorerReply } from '../../src/wire/protocol.js';

const EMPTY: Omit<CheckScores, 'logProbs'> = { layout: { user: [], tools: [], toolResults: [] }, truncation: { droppedToolDefinitions: false, shortenedMessages: {} } };

describe('what a scored reply moves instead of copying', () => {
  it("moves each log-prob array's and the attention rows' buffer, once each", () => {
    const full = new Float64Array([-1, -2]);
    const ablated = new Float64Array([-3, -4]);
    const attention = new Float32Array(12);
    const reply: ScorerReply = {
      type: 'scored',
      id: 1,
      scores: { ...EMPTY, logProbs: new Map([['full', full], ['u', ablated], ['same-as-full', full]]), attention: { data: attention, dims: { layers: 1, heads: 2, rows: 2, cols: 3 } } },
    };
    expect(transferables(reply)).toEqual([full.buffer, ablated.buffer, attention.buffer]);
  });

  it('copies a view that does not own its whole buffer (moving it would detach what the host still holds), and moves nothing for other replies', () => {
    const shared = new Float64Array(8);
    const reply: ScorerReply = { type: 'scored', id: 2, scores: { ...EMPTY, logProbs: new Map([['full', shared.subarray(0, 4)]]) } };
    expect(transferables(reply)).toEqual([]);
    expect(transferables({ type: 'pong', id: 3 })).toEqual([]);
    expect(transferables({ type: 'progress', event: { type: 'verified', file: 'config.json', bytes: 1 } })).toEqual([]);
  });
});
