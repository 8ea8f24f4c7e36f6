/**
 * `edgearmor check --json` on the embedded model: one record per case with the MindGuard / tool-poisoning
 * record, a top-level `detected` that is true when either signal flags, and the same numbers whichever of
 * the three tool shapes (flat, OpenAI function, MCP inputSchema) the case uses.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAMILIARITY_MIN_CHECKS } from '../../src/core/familiarity.js';
import { findCase, generateCases } from '../../src/scenarios/index.js';
import { requirement } from '../requirements.js';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const EMBEDDED_MODEL = join(ROOT, 'public/models/edgearmor-proxy');
const CLI_TIMEOUT_MS = 120_000;

describe.skipIf(!requirement(existsSync(EMBEDDED_MODEL), 'the embedded model'))('edgearmor check --json', () => {
  it('reports mindguard {detected, source_tool, flow, air} per case, the same for flat, OpenAI and MCP tool shapes', () => {
    const c = findCase('travel', 'poisoning', 1)!;
    const tools = c.tools!;
    const shapes = {
      flat: tools,
      openai: tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } })),
      mcp: tools.map((t) => ({ name: t.name, description: t.description, inputSchema: t.parameters })),
    };
    const file = join(mkdtempSync(join(tmpdir(), 'edgearmor-check-cli-')), 'cases.jsonl');
    writeFileSync(file, Object.entries(shapes).map(([id, t]) => JSON.stringify({ id, messages: c.messages, action: c.action, tools: t })).join('\n') + '\n');
    const stdout = execFileSync(NODE, [CLI, 'check', file, '--json', '--model', EMBEDDED_MODEL], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS, stdio: ['ignore', 'pipe', 'ignore'] });
    const records = stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, any>);
    expect(records.map((r) => r['id'])).toEqual(['flat', 'openai', 'mcp']);
    for (const r of records) {
      expect(r).toMatchObject({ schema_version: 1, reason: 'model', rule: 'causalarmor', user_weight: 2, tau: -0.1 });
      const mg = r['mindguard'];
      expect(Object.keys(mg)).toEqual(expect.arrayContaining(['detected', 'source_tool', 'flow', 'air']));
      expect(typeof mg.air).toBe('number');
      expect(mg.source_tool === null).toBe(!mg.detected);
      expect(mg.detected ? ['control', 'data'] : [null]).toContain(mg.flow);
      if (mg.detected) expect(tools.map((t) => t.name)).toContain(mg.source_tool);
      expect(r['detected']).toBe(r['flagged'].length > 0 || mg.detected);
      expect(r['decision']).toBe(r['detected'] ? 'block' : 'allow');
    }
    const [flat, openai, mcp] = records;
    for (const other of [openai!, mcp!]) {
      expect(other['log_probs']).toEqual(flat!['log_probs']);
      expect(other['mindguard']).toEqual(flat!['mindguard']);
      expect(other['decision']).toBe(flat!['decision']);
    }
  }, CLI_TIMEOUT_MS);

  it("says after the verdicts whether the proxy knows the agent: the generator's agents are ones it knows", () => {
    const cases = generateCases({ split: 'test', seed: 3, n: FAMILIARITY_MIN_CHECKS });
    const file = join(mkdtempSync(join(tmpdir(), 'edgearmor-check-cli-')), 'agent.jsonl');
    writeFileSync(file, cases.map((c) => JSON.stringify({ id: c.id, messages: c.messages, action: c.action, ...(c.tools ? { tools: c.tools } : {}) })).join('\n') + '\n');
    const run = spawnSync(NODE, [CLI, 'check', file, '--json', '--model', EMBEDDED_MODEL], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    expect(run.status).toBe(0);
    const records = run.stdout.trim().split('\n').map((l) => JSON.parse(l) as { reason: string; call_log_prob_per_token: number | null; log_probs: Record<string, number>; action_tokens: number });
    const scored = records.filter((r) => r.reason === 'model');
    expect(scored).toHaveLength(FAMILIARITY_MIN_CHECKS);
    // Each record says how well the proxy predicted its call; the summary counts those below the threshold.
    for (const r of scored) expect(r.call_log_prob_per_token).toBeCloseTo(r.log_probs['full']! / r.action_tokens, 10);
    const below = scored.filter((r) => r.call_log_prob_per_token! < -4.92).length;
    expect(below).toBeLessThanOrEqual(2);
    const line = run.stderr.split('\n').find((l) => l.startsWith('edgearmor: familiarity: '));
    expect(line).toBe(`edgearmor: familiarity: ${below} of ${scored.length} calls predicted below -4.92 nats per action token: an agent the proxy knows`);
  }, CLI_TIMEOUT_MS);
});
