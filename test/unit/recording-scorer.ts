/** A scorer for tests of the conductor: no model, every request recorded, every variant given the same log-prob. */
import type { CheckScores } from '../../src/core/judge.js';
import type { Scorer, ScorerInfo, ScoreRequest } from '../../src/core/scorer-port.js';

/** Records each request in `sent` and scores every variant alike, so the model finds nothing in any check. */
export function recordingScorer(sent: ScoreRequest[], info: ScorerInfo): Scorer {
  return {
    info,
    async score(request) {
      sent.push(request);
      const scores: CheckScores = {
        logProbs: new Map(request.variants.map((v) => [v.id, new Float64Array(2).fill(-1)])),
        layout: { user: [], tools: [], toolResults: [] },
        truncation: { droppedToolDefinitions: false, shortenedMessages: {} },
      };
      return scores;
    },
    dispose: async () => undefined,
  };
}
