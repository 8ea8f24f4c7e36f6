/**
 * `edgearmor check --traffic`: an agent's logged conversations (the shapes `edgearmor adapt` reads), every
 * tool call checked as the guard would have checked it before it ran, and the proxy's familiarity with the
 * agent on stderr. On the tiny model: which calls are checked and how they are named is the point here.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { makeTinyGuardModel, TINY_GUARD_MODEL_AVAILABLE } from './tiny-guard-model.js';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI_TIMEOUT_MS = 120_000;

const weather = { name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } };
const email = { name: 'send_email', description: 'Send an email', parameters: { type: 'object', properties: { to: { type: 'string' }, body: { type: 'string' } } } };
const call = (id: string, name: string, args: object) => ({ id, type: 'function', function: { name, arguments: JSON.stringify(args) } });

/** Two OpenAI-shaped conversations: three calls after the user's request, one before it (not checked). */
const TRAFFIC = [
  {
    id: 'trip',
    messages: [
      { role: 'user', content: 'What is the weather in Oslo and Bergen? Email the answer to ana@example.com.' },
      { role: 'assistant', content: null, tool_calls: [call('c1', 'get_weather', { city: 'Oslo' }), call('c2', 'get_weather', { city: 'Bergen' })] },
      { role: 'tool', tool_call_id: 'c1', content: 'Oslo: 4 C, snow.' },
      { role: 'tool', tool_call_id: 'c2', content: 'Bergen: 7 C, rain.' },
      { role: 'assistant', content: null, tool_calls: [call('c3', 'send_email', { to: 'ana@example.com', body: 'Oslo 4 C snow; Bergen 7 C rain.' })] },
      { role: 'tool', tool_call_id: 'c3', content: 'sent' },
    ],
    tools: [weather, email].map((f) => ({ type: 'function', function: f })),
  },
  {
    messages: [
      { role: 'system', content: 'You are a weather assistant.' },
      { role: 'assistant', content: null, tool_calls: [call('w0', 'get_weather', { city: 'Paris' })] },
      { role: 'tool', tool_call_id: 'w0', content: 'Paris: 12 C.' },
      { role: 'user', content: 'And in Rome?' },
      { role: 'assistant', content: null, tool_calls: [call('w1', 'get_weather', { city: 'Rome' })] },
    ],
    tools: [{ type: 'function', function: weather }],
  },
];

function write(name: string, lines: readonly string[]): string {
  const file = join(mkdtempSync(join(tmpdir(), 'edgearmor-check-traffic-')), name);
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

describe.skipIf(!TINY_GUARD_MODEL_AVAILABLE)('edgearmor check --traffic', () => {
  let model: string;
  const run = (file: string, ...flags: string[]) =>
    spawnSync(NODE, [CLI, 'check', file, '--traffic', '--json', '--model', model, ...flags], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS, cwd: tmpdir() });

  beforeAll(async () => {
    model = await makeTinyGuardModel();
  });

  it('checks every call after a user request with the messages before it, names it by conversation and message, and reports familiarity', () => {
    const result = run(write('traffic.jsonl', TRAFFIC.map((t) => JSON.stringify(t))));
    expect(result.stderr).not.toMatch(/error/i);
    expect(result.status).toBe(0);
    const records = result.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: string; reason: string; decision: string });
    expect(records.map((r) => r.id)).toEqual(['trip messages[1].tool_calls[0]', 'trip messages[1].tool_calls[1]', 'trip messages[4].tool_calls[0]', 'line-2 messages[4].tool_calls[0]']);
    // The first calls come before any tool result: nothing untrusted to attribute, and no model pass is needed.
    const scored = records.filter((r) => r.reason === 'model').length;
    expect(scored).toBeGreaterThan(0);
    // The tiny model's random weights predict every call poorly; too few checks to judge the agent.
    expect(result.stderr).toContain(`familiarity: ${scored} of ${scored} calls predicted below -4.92 nats per action token; too few checks to judge the agent (10 needed)`);
  }, CLI_TIMEOUT_MS);

  it('names the next step when the proxy does not know the agent: the adapt command for this file, after logging enough conversations', () => {
    // Ten conversations with checked calls: enough to judge the agent, too few to adapt on.
    const file = write('agent.jsonl', Array.from({ length: 5 }, () => TRAFFIC.map((t) => JSON.stringify(t))).flat());
    const result = run(file);
    expect(result.status).toBe(0);
    const scored = result.stdout.trim().split('\n').filter((l) => (JSON.parse(l) as { reason: string }).reason === 'model').length;
    expect(scored).toBeGreaterThanOrEqual(10);
    const lines = result.stderr.trim().split('\n');
    // The tiny model's random weights predict no call: an agent it does not know.
    expect(lines.at(-2)).toMatch(new RegExp(`^edgearmor: familiarity: ${scored} of ${scored} calls predicted below -4\\.92 nats per action token: an agent the proxy does not know`));
    expect(lines.at(-1)).toBe(`edgearmor: next: log at least 50 conversations of this agent with a tool call after a user message (this file has 10), then npx edgearmor adapt ${file} --base-model ${model} --out my-agent-model`);
  }, CLI_TIMEOUT_MS);

  it('refuses bad traffic before the model loads: every bad line, and a file with no call to check', () => {
    const bad = run(write('bad.jsonl', [JSON.stringify(TRAFFIC[0]), '{"messages": 3}', 'not json']));
    expect(bad.status).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(/bad\.jsonl:2: .*messages/);
    expect(bad.stderr).toMatch(/bad\.jsonl:3: not valid JSON/);
    const none = run(write('none.jsonl', [JSON.stringify({ messages: [{ role: 'user', content: 'Hello' }, { role: 'assistant', content: 'Hi!' }] })]));
    expect(none.status).toBe(2);
    expect(none.stderr).toMatch(/none\.jsonl: no tool call after a user message in its 1 conversations; nothing to check/);
    // A shape named with --format is used for every line; a wrong name, or --format on a case file, is refused.
    const traffic = write('traffic.jsonl', [JSON.stringify(TRAFFIC[0])]);
    expect(run(traffic, '--format', 'anthropic')).toMatchObject({ status: 2, stdout: '', stderr: expect.stringMatching(/traffic\.jsonl:1: /) });
    expect(run(traffic, '--format', 'chatml')).toMatchObject({ status: 2, stderr: expect.stringMatching(/--format: received "chatml"; allowed: guard, openai, anthropic, mcp/) });
    const caseFile = spawnSync(NODE, [CLI, 'check', traffic, '--format', 'openai'], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    expect(caseFile).toMatchObject({ status: 2, stderr: expect.stringMatching(/--format is for --traffic files only/) });
  }, CLI_TIMEOUT_MS);
});
