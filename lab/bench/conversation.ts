/**
 * What checking a conversation's calls in one run (`checkMany`) saves over one check after another, as adapt's
 * screening does it: one real agent conversation (an attack-free AgentDojo training run, the longest of a suite
 * by calls unless `--id` names one), every call site checked both ways by the embedded model in process. Reports
 * the tokens the model computed (counted at the scorer port, windows included), the wall time of each way and
 * whether every verdict agreed (decision, reason).
 *
 * `npx tsx lab/bench/conversation.ts [--traffic FILE] [--suite slack] [--id ID] [--calls N: the first N only] [--model DIR]`
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { callSites, readTraffic, type Conversation } from '../../src/adapt/traffic.js';
import { createConductor } from '../../src/core/conductor.js';
import type { Scorer } from '../../src/core/scorer-port.js';
import { loadEngineScorer } from '../../src/engine/local-guard.js';
import type { EngineScores, ProxyEngine } from '../../src/engine/engine.js';
import { directoryReader } from '../../src/engine/files-node.js';
import type { Verdict } from '../../src/core/verdict.js';

const { values } = parseArgs({
  options: {
    traffic: { type: 'string', default: fileURLToPath(new URL('../../../shared/datasets/agentdojo/train-traces.jsonl', import.meta.url)) },
    suite: { type: 'string', default: 'slack' },
    id: { type: 'string' },
    calls: { type: 'string' },
    model: { type: 'string', default: fileURLToPath(new URL('../../public/models/edgearmor-proxy', import.meta.url)) },
  },
});

/** The suite's attack-free runs as traffic (the training traces carry their suite and attack on each line). */
function pick(): Conversation {
  const raw = readTraffic(values.traffic!);
  const lines = new Map(
    readFileSync(values.traffic!, 'utf8')
      .split('\n')
      .filter((l) => l.trim())
      .map((l) => JSON.parse(l) as { id: string; suite?: string; attack?: string })
      .map((l) => [l.id, l]),
  );
  const pool = raw.filter((c) => (values.id ? c.id === values.id : lines.get(c.id)?.suite === values.suite && lines.get(c.id)?.attack === 'none'));
  if (pool.length === 0) throw new Error(`no conversation matches (suite ${values.suite}, id ${values.id ?? 'any'})`);
  return pool.reduce((a, b) => (callSites(b).length > callSites(a).length ? b : a));
}

/** A scorer that counts the tokens the model computed for it. */
function counting(scorer: ProxyEngine, tally: { tokens: number }): Scorer {
  const add = (s: EngineScores): EngineScores => ((tally.tokens += s.computedTokens), s);
  return {
    info: scorer.info,
    score: async (r) => add(await scorer.score(r)),
    scoreMany: async (rs, signal) => (await scorer.scoreMany(rs, signal)).map(add),
    dispose: () => scorer.dispose(),
  };
}

async function main(): Promise<void> {
  const conversation = pick();
  const inputs = callSites(conversation)
    .map((s) => s.input)
    .slice(0, values.calls ? Number(values.calls) : undefined);
  const tally = { tokens: 0 };
  const loaded = await loadEngineScorer({ reader: directoryReader(values.model!), backends: ['node'] });
  const guard = createConductor({ timeoutMs: 30 * 60_000 }, { load: async () => ({ ...loaded, scorer: counting(loaded.scorer as ProxyEngine, tally) }) });
  try {
    await guard.check(inputs[0]!);
    tally.tokens = 0;
    let t = performance.now();
    const separate: Verdict[] = [];
    for (const input of inputs) separate.push(await guard.check(input));
    const separateMs = performance.now() - t;
    const separateTokens = tally.tokens;
    tally.tokens = 0;
    t = performance.now();
    const batched = await guard.checkMany(inputs);
    const batchedMs = performance.now() - t;
    const agree = batched.every((v, i) => v.decision === separate[i]!.decision && v.reason === separate[i]!.reason);
    const maxScoreDiff = Math.max(...batched.map((v, i) => Math.abs((v.score ?? 0) - (separate[i]!.score ?? 0))));
    console.log(
      JSON.stringify({
        conversation: conversation.id,
        messages: conversation.messages.length,
        calls: inputs.length,
        windowed: separate.filter((v) => (v.windows?.count ?? 0) > 1).length,
        separate: { tokens: separateTokens, seconds: +(separateMs / 1000).toFixed(2) },
        checkMany: { tokens: tally.tokens, seconds: +(batchedMs / 1000).toFixed(2) },
        tokenRatio: +(separateTokens / Math.max(1, tally.tokens)).toFixed(2),
        timeRatio: +(separateMs / batchedMs).toFixed(2),
        verdictsAgree: agree,
        maxScoreDiff,
      }),
    );
  } finally {
    await guard.dispose();
  }
}

await main();
