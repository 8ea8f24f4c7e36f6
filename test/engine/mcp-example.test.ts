/**
 * The MCP example (examples/mcp/guarded-client.ts) on the embedded model: a client that checks every
 * tools/call with the guard sends exactly the calls the guard allows, in order, and none after a block.
 * Which calls the model blocks is the evaluation's business; here the wiring is.
 */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createGuardedClient, replay, scenarioServer } from '../../examples/mcp/guarded-client.js';
import { embeddedModelDir } from '../../src/engine/files-node.js';
import { createNodeGuard } from '../../src/node.js';
import type { Verdict } from '../../src/core/verdict.js';
import { findCase } from '../../src/scenarios/index.js';
import { requirement } from '../requirements.js';

const MODEL_TIMEOUT_MS = 180_000;

describe.skipIf(!requirement(existsSync(embeddedModelDir()), 'the embedded model'))('the guarded MCP client example', () => {
  const guard = createNodeGuard({ backends: ['node'] });
  afterAll(() => guard.dispose());

  it(
    'sends what the guard allows and nothing it blocks, over generated poisoning and clean cases',
    async () => {
      let blocked = 0;
      for (const [domain, pick] of [['banking', 'poisoning'], ['banking', 'benign'], ['travel', 'poisoning'], ['travel', 'benign']] as const) {
        const c = findCase(domain, pick, 1)!;
        const { calls, received } = await replay(c, guard);
        expect(calls.length).toBeGreaterThan(0);
        // The server saw tools/list, then exactly the allowed calls, in order.
        expect(received[0]!.method).toBe('tools/list');
        const sent = received.slice(1).map((r) => r.params?.name);
        expect(sent).toEqual(calls.filter((x) => x.verdict.decision === 'allow').map((x) => x.name));
        for (const x of calls) expect(x.response === null).toBe(x.verdict.decision === 'block');
        // Nothing after a blocked call; and the last planned call (the case's action) is reached only when nothing was blocked.
        const firstBlock = calls.findIndex((x) => x.verdict.decision === 'block');
        if (firstBlock >= 0) {
          expect(firstBlock).toBe(calls.length - 1);
          blocked += 1;
        } else {
          expect(calls.at(-1)!.name).toBe(c.action.name);
        }
        // Every verdict came from the model or the no-untrusted-spans preflight, never from a failure.
        for (const x of calls) expect(['model', 'no-untrusted-spans']).toContain(x.verdict.reason);
      }
      expect(blocked).toBeGreaterThan(0);
    },
    MODEL_TIMEOUT_MS,
  );

  it('hands the guard the tool list, the earlier exchanges and the call', async () => {
    const c = findCase('travel', 'benign', 1)!;
    const { transport } = scenarioServer(c);
    // A guard that allows everything and records its input: this test is about what the client hands over.
    const seen: unknown[] = [];
    const recording = { check: async (input: unknown) => (seen.push(input), { decision: 'allow' } as Verdict) };
    const client = createGuardedClient(transport, recording, c.messages.filter((m) => m.role === 'user'));
    const first = c.messages.flatMap((m) => m.tool_calls ?? [])[0];
    const second = c.action;
    await client.callTool(first!.name, first!.arguments as never);
    await client.callTool(second!.name, second!.arguments as never);
    const last = seen.at(-1) as { messages: Array<{ role: string; tool_name?: string }>; action: { name: string }; tools: Array<{ name: string }> };
    expect(last.action.name).toBe(second!.name);
    expect(last.tools.map((t) => t.name)).toEqual(c.tools!.map((t) => t.name));
    expect(last.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
    expect(last.messages[2]!.tool_name).toBe(first!.name);
  }, MODEL_TIMEOUT_MS);
});
