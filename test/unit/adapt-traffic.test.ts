import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { adapt } from '../../src/adapt/adapt.js';
import { callSites, detectFormat, parseConversation, readTraffic } from '../../src/adapt/traffic.js';
import { InvalidInputError } from '../../src/core/errors.js';

const tools = [{ name: 'get_weather', description: 'Weather for a city', parameters: { type: 'object', properties: { city: { type: 'string' } } } }];
const guardLine = {
  id: 'g1',
  messages: [
    { role: 'system', content: 'You help.' },
    { role: 'user', content: 'Weather in Oslo, then in Bergen?' },
    { role: 'assistant', content: '', tool_calls: [{ name: 'get_weather', arguments: { city: 'Oslo' } }] },
    { role: 'tool', tool_name: 'get_weather', content: 'Oslo: 3C' },
    { role: 'assistant', content: '', tool_calls: [{ name: 'get_weather', arguments: { city: 'Bergen' } }, { name: 'get_weather', arguments: { city: 'Oslo' } }] },
    { role: 'tool', tool_name: 'get_weather', content: 'Bergen: 5C' },
    { role: 'assistant', content: 'Oslo 3C, Bergen 5C.' },
  ],
  tools,
};
const openaiLine = {
  messages: [
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: 'Oslo: 3C' },
  ],
  tools: [{ type: 'function', function: tools[0] }],
};
const anthropicLine = {
  system: 'You help.',
  messages: [
    { role: 'user', content: 'Weather in Oslo?' },
    { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'get_weather', input: { city: 'Oslo' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'Oslo: 3C' }] },
  ],
  tools: [{ name: 'get_weather', description: 'Weather for a city', input_schema: tools[0]!.parameters }],
};
const mcpLine = {
  messages: [{ role: 'user', content: 'Weather in Oslo?' }],
  toolsList: { tools: [{ name: 'get_weather', description: 'Weather for a city', inputSchema: tools[0]!.parameters }] },
  exchanges: [
    { request: { method: 'tools/call', params: { name: 'get_weather', arguments: { city: 'Oslo' } } }, response: { content: [{ type: 'text', text: 'Oslo: 3C' }] } },
    { role: 'user', content: 'And Bergen?' },
    { request: { method: 'tools/call', params: { name: 'get_weather', arguments: { city: 'Bergen' } } }, response: { content: [{ type: 'text', text: 'Bergen: 5C' }] } },
  ],
};

function file(lines: readonly unknown[], raw?: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'edgearmor-traffic-'));
  const path = join(dir, 'traffic.jsonl');
  writeFileSync(path, raw ?? lines.map((l) => JSON.stringify(l)).join('\n'));
  return path;
}

describe('adapt traffic', () => {
  it('detects each logged shape and converts it to the same guard conversation', () => {
    expect([guardLine, openaiLine, anthropicLine, mcpLine].map((l) => detectFormat(l))).toEqual(['guard', 'openai', 'anthropic', 'mcp']);
    const oneCall = [openaiLine, anthropicLine].map((l, i) => parseConversation(l, i + 1));
    for (const c of oneCall) {
      expect(c.tools.map((t) => t.name)).toEqual(['get_weather']);
      expect(c.tools[0]!.parameters).toEqual(tools[0]!.parameters);
      const [site, ...rest] = callSites(c);
      expect(rest).toEqual([]);
      expect(site!.input.action).toEqual({ name: 'get_weather', arguments: { city: 'Oslo' } });
      expect(c.messages.at(-1)).toEqual({ role: 'tool', tool_name: 'get_weather', content: 'Oslo: 3C' });
    }
    const mcp = parseConversation(mcpLine, 4);
    expect(mcp.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user', 'assistant', 'tool']);
    expect(callSites(mcp).map((s) => s.input.messages.length)).toEqual([1, 4]);
  });

  it('turns every call after a user message into the guard input it was checked as', () => {
    const c = parseConversation(guardLine, 1);
    const sites = callSites(c);
    expect(sites.map((s) => [s.messageIndex, s.callIndex, (s.input.action.arguments as { city: string }).city])).toEqual([
      [2, 0, 'Oslo'],
      [4, 0, 'Bergen'],
      [4, 1, 'Oslo'],
    ]);
    expect(sites[1]!.input.messages).toHaveLength(4);
    expect(sites[1]!.input.tools).toEqual(tools.map((t) => ({ ...t })));
    // A call before any user message cannot be judged: left out.
    const early = parseConversation({ messages: [{ role: 'assistant', content: '', tool_calls: [{ name: 'get_weather', arguments: {} }] }] }, 1);
    expect(callSites(early)).toEqual([]);
  });

  it('reports every bad line as FILE:LINE with what is wrong, a byte-order mark is fine', () => {
    const path = file([], `\ufeff${JSON.stringify(guardLine)}\nnot json\n${JSON.stringify({ messages: [{ role: 'robot', content: 'x' }] })}\n[1]\n`);
    let error: unknown;
    try {
      readTraffic(path);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidInputError);
    const lines = (error as Error).message.split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`^${path}:2: not valid JSON`));
    expect(lines[1]).toMatch(new RegExp(`^${path}:3: .*role.*"system", "user", "assistant", "tool"`));
    expect(lines[2]).toMatch(new RegExp(`^${path}:4: .*expected a conversation object`));
    expect(() => readTraffic(file([], '\n\n'))).toThrow(/no conversations found/);
    expect(() => readTraffic(join(tmpdir(), 'no-such-traffic.jsonl'))).toThrow(/no such file/);
    // A named format is applied to every line.
    expect(() => readTraffic(file([guardLine]), 'openai')).toThrow(/:1: /);
  });

  it('refuses too little traffic before anything trains, saying how much is needed', async () => {
    const path = file(Array.from({ length: 12 }, (_, i) => ({ ...guardLine, id: `c${i}` })));
    await expect(adapt({ traffic: path, out: join(tmpdir(), `edgearmor-adapt-none-${process.pid}`) })).rejects.toThrow(/12 conversations with a tool call.*at least 50/);
  });
});
