/**
 * The remote proxy renders like the in-process guard: a guard pointed at `serve-proxy` over a random-weight
 * decoder with a real family tokenizer and template (Qwen3, Gemma 3, Llama 3; family-models.ts) gives the verdict
 * the in-process guard gives on the same model without MindGuard's attention, which a log-prob protocol cannot
 * return: the same rendering, decision, flags and scores. MindGuard's status is said plainly: read here,
 * `unavailable` with the reason remotely, so where its AIR alone flags, the in-process guard blocks and the
 * remote one does not (Llama 3 on the travel check). A template that drops a part of the check is refused
 * remotely as it is here.
 *
 * The server answers vLLM's protocol, which returns a log-prob at every prompt position: for a 150k-260k
 * vocabulary that is the whole vocabulary at every position of every variant, where the in-process guard computes
 * the action's positions only. On two shared cores the MCP check alone takes minutes remotely, the travel and long
 * checks several times that, so the suite runs the MCP check on each family (each family's rendering, its tool
 * definitions, calls and results); the travel and long checks were compared once by hand (docs/proxies.md).
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Verdict } from '../../src/core/verdict.js';
import type { GuardInput } from '../../src/core/types.js';
import { createEngine, type ProxyEngine } from '../../src/engine/engine.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { startProxyServer, type RunningProxyServer } from '../../src/engine/proxy-server.js';
import { createNodeGuard } from '../../src/node.js';
import { MODEL_CASES } from './family-cases.js';
import { SMOLLM2_TEMPLATE } from './family-fixtures.js';
import { CAN_BUILD_FAMILY_MODELS, familyModelDir, type Family } from './family-models.js';

// Per family: the fixture build on first use, three loads, and the check scored twice on a shared CPU.
const FAMILY_TIMEOUT_MS = 900_000;
// A check's own deadline: the server scores every position of the check's variants over the whole vocabulary.
const CHECK_TIMEOUT_MS = 600_000;
// Both sides run the same q4 graph in the same prefix plan (serve-proxy scores a prompt's positions in chunks that
// continue its cache); only float rounding may differ.
const SCORE_TOLERANCE = 1e-4;
const SERVED = 'family-proxy';
const REMOTE_MINDGUARD = /^attention: a remote proxy returns log-probs only; MindGuard falls back to leave-one-out over tool descriptions$/;


function expectSameVerdict(remote: Verdict, local: Verdict, label: string): void {
  expect(remote, `${label}: ${remote.error?.message ?? ''}`).toMatchObject({ reason: 'model', backend: 'remote', rendering: local.rendering, decision: local.decision, detected: local.detected });
  expect(remote.flagged, label).toEqual(local.flagged);
  expect(remote.windows?.count, label).toBe(local.windows?.count);
  const [r, l] = [remote.attribution!, local.attribution!];
  expect(r.variants.map((v) => v.id), label).toEqual(l.variants.map((v) => v.id));
  r.variants.forEach((v, i) => expect(Math.abs(v.logProb - l.variants[i]!.logProb), `${label} ${v.id}`).toBeLessThan(SCORE_TOLERANCE));
  expect(Math.abs(remote.score! - local.score!), label).toBeLessThan(SCORE_TOLERANCE);
  const tools = (v: Verdict) => v.toolPoisoning?.leaveOneOut?.tools ?? [];
  expect(tools(remote).map((t) => [t.tool, t.flagged]), label).toEqual(tools(local).map((t) => [t.tool, t.flagged]));
  tools(remote).forEach((t, i) => expect(Math.abs(t.score - tools(local)[i]!.score), `${label} ${t.tool}`).toBeLessThan(SCORE_TOLERANCE));
}

describe.skipIf(!CAN_BUILD_FAMILY_MODELS)('the remote proxy (serve-proxy) over the family decoders', () => {
  const engines: ProxyEngine[] = [];
  const servers: RunningProxyServer[] = [];
  const guards: Array<{ dispose(): Promise<void> }> = [];
  afterAll(async () => {
    for (const g of guards) await g.dispose();
    for (const s of servers) await s.close();
    for (const e of engines) await e.dispose();
  });

  /** In-process guards with and without MindGuard's attention, and a guard on serve-proxy, over the same model directory. */
  async function pair(family: Family, extra: { chatTemplate?: string; actionText?: 'raw' | 'template' } = {}) {
    const dir = familyModelDir(family);
    // The server scores token ids only: its own rendering plays no part.
    const engine = await createEngine(await loadModelFiles(directoryReader(dir), 'q4'), { backend: 'node' });
    engines.push(engine);
    const server = await startProxyServer({ engine, servedModelName: SERVED });
    servers.push(server);
    const options = { modelDir: dir, modelVariant: 'q4' as const, timeoutMs: CHECK_TIMEOUT_MS, ...extra };
    const local = createNodeGuard({ ...options, backends: ['node'] });
    const remote = createNodeGuard({ ...options, remoteProxy: { url: server.url, model: SERVED } });
    guards.push(local, remote);
    const blind = () => {
      const g = createNodeGuard({ ...options, backends: ['node'], toolPoisoning: { attention: false } });
      guards.push(g);
      return g;
    };
    return { local, blind, remote, server };
  }

  // One family rendered by its own template and one by a shipped rendering: the remote side shares both code paths.
  // Gemma 3 (a 262k vocabulary, the slowest to serve) was compared by hand (docs/proxies.md).
  for (const family of ['qwen3', 'llama3'] as const) {
    it(
      `${family}: the MCP check gets the in-process verdict without attention remotely, in the same rendering; MindGuard's status is said on both sides`,
      async () => {
        const { local, blind: withoutAttention, remote, server } = await pair(family);
        const blind = withoutAttention();
        const [l, r] = [await local.ready, await remote.ready];
        expect(r).toMatchObject({ backend: 'remote', rendering: l.rendering, attention: false });
        expect(l.attention).toBe(true);
        const input: GuardInput = MODEL_CASES.mcp;
        const before = server.requests;
        const [rv, bv, lv] = [await remote.check(input), await blind.check(input), await local.check(input)];
        expect(server.requests - before).toBe(rv.windows?.count ?? 1);
        expectSameVerdict(rv, bv, family);
        expect(lv.toolPoisoning!.unavailable).toEqual([]);
        expect(lv.toolPoisoning!.attention!.air.length).toBeGreaterThan(0);
        // With attention, only MindGuard's own flag can change the decision.
        expect(lv.decision).toBe(lv.toolPoisoning!.attention!.detected ? 'block' : bv.decision);
        expect(rv.toolPoisoning!.unavailable).toEqual([expect.stringMatching(REMOTE_MINDGUARD)]);
        expect(rv.toolPoisoning!.attention).toBeNull();
      },
      FAMILY_TIMEOUT_MS,
    );
  }

  it(
    'refuses remotely, as in-process, a check whose template drops a message (SmolLM2 template, raw action text): the failure policy, naming what is missing, nothing sent',
    async () => {
      const { local, remote, server } = await pair('qwen3', { chatTemplate: SMOLLM2_TEMPLATE, actionText: 'raw' });
      const before = server.requests;
      const [rv, lv] = [await remote.check(MODEL_CASES.travel), await local.check(MODEL_CASES.travel)];
      expect(server.requests).toBe(before);
      for (const v of [rv, lv]) expect(v).toMatchObject({ reason: 'failure-policy', decision: 'block', rendering: 'custom-template', error: { code: 'inference-failed' } });
      expect(rv.error!.message).toBe(lv.error!.message);
      expect(rv.error!.message).toMatch(/left out of what the proxy would read: the call to "search_flights" in messages\[2\]/);
    },
    FAMILY_TIMEOUT_MS,
  );
});
