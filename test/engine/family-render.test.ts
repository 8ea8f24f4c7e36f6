/**
 * Guard calls rendered for the model families users bring, with their real tokenizers and chat templates:
 * each family gets its own template where it writes a tool conversation whole (Qwen3) and a shipped rendering
 * in its own turn format where it does not (Gemma 3, Llama 3, Llama 3.2 with parallel calls, SmolLM2, Phi-3.5);
 * every message and tool definition is in what is rendered, the scored action is the call itself, and a
 * template that would drop a part of the check is refused. On tiny random-weight decoders with the Qwen3,
 * Gemma 3 and Llama 3 vocabularies, the project's MCP and travel checks (and on Gemma 3 the long one) are model verdicts in which
 * every tool result, description and user request moves the call's log-prob, and MindGuard reads attention.
 */
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildContext, type StructuredContext } from '../../src/core/context.js';
import { InferenceError } from '../../src/core/errors.js';
import { resolveOptions } from '../../src/core/options.js';
import { argumentValueList } from '../../src/core/tool-poisoning.js';
import type { GuardInput } from '../../src/core/types.js';
import { buildVariants } from '../../src/core/variants.js';
import { formatJson } from '../../src/engine/chat-format.js';
import { renderingFor, templateProblem, type Rendering } from '../../src/engine/rendering.js';
import { buildManifest } from '../../src/engine/files-node.js';
import { encodeTemplateCall } from '../../src/engine/template-format.js';
import { createProxyTokenizer, type ProxyTokenizer } from '../../src/engine/tokenizer.js';
import { createNodeGuard } from '../../src/node.js';
import { findCase } from '../../src/scenarios/index.js';
import { lenmlTokenizerFiles, LLAMA32_TEMPLATE, phiLikeTokenizerFiles, PHI35_TEMPLATE, SMOLLM2_TEMPLATE } from './family-fixtures.js';
import { CAN_BUILD_FAMILY_MODELS, familyModelDir, type Family } from './family-models.js';
import { CASES, inputOf, MODEL_CASES } from './family-cases.js';

// Building a 262k-vocabulary tokenizer takes seconds alone and more beside the suite's other worker.
const TOKENIZER_TIMEOUT_MS = 240_000;
// Each family: the fixture build on first use, loading, and three checks (one of about 5k tokens) on two cores.
const MODEL_TIMEOUT_MS = 600_000;
// A check's own deadline: the long check re-renders and scores a dozen 5k-token variants on a shared CPU.
const CHECK_TIMEOUT_MS = 300_000;
// A delta smaller than this is no movement at all (float32 log-probs summed over a few dozen tokens).
const NO_MOVEMENT = 1e-4;

const contextOf = (input: GuardInput): StructuredContext => buildContext(input, resolveOptions());
/** Whether a string the template prints (a description, an argument) is in the text, as given or JSON-escaped. */
const shows = (text: string, s: string) => text.includes(s) || text.includes(JSON.stringify(s).slice(1, -1));

/** Every message's text, every tool's name and description in the full variant; the call's name and argument values in the action. */
async function expectWholeRender(tokenizer: ProxyTokenizer, rendering: Rendering, input: GuardInput): Promise<{ context: string; action: string }> {
  const ctx = contextOf(input);
  const call = await encodeTemplateCall(tokenizer, ctx, 'template', 16_384, rendering);
  const context = tokenizer.decode(call.contextIds(ctx.messages.map((_, i) => i), new Set()));
  for (const m of ctx.messages) if (m.content !== '') expect(context).toContain(m.content);
  for (const t of ctx.tools) {
    expect(context).toContain(t.name);
    expect(shows(context, t.description), `${rendering}: description of ${t.name}`).toBe(true);
  }
  const action = call.action.text;
  expect(action.startsWith(ctx.action.name)).toBe(true);
  for (const v of argumentValueList(ctx.action.arguments)) expect(shows(action, typeof v === 'string' ? v : formatJson(v)), `${rendering}: value ${formatJson(v)}`).toBe(true);
  // The variants all end with the same action: their contexts differ only where the ablated parts were.
  for (const v of buildVariants(ctx, { toolLeaveOneOut: true })) expect(call.contextIds(v.keep, new Set(v.dropTools ?? [])).length).toBeGreaterThan(0);
  return { context, action };
}

describe('renderings chosen for real tokenizers and templates', () => {
  const tokenizers = new Map<string, ProxyTokenizer>();
  beforeAll(() => {
    const qwen = createProxyTokenizer(lenmlTokenizerFiles('qwen3'));
    const llama = createProxyTokenizer(lenmlTokenizerFiles('llama3'));
    tokenizers.set('qwen3', qwen);
    tokenizers.set('gemma3', createProxyTokenizer(lenmlTokenizerFiles('gemma3')));
    tokenizers.set('llama3', llama);
    tokenizers.set('llama3.2', llama.withChatTemplate(LLAMA32_TEMPLATE));
    tokenizers.set('smollm2', qwen.withChatTemplate(SMOLLM2_TEMPLATE));
    tokenizers.set('phi3.5', createProxyTokenizer(phiLikeTokenizerFiles()));
  }, TOKENIZER_TIMEOUT_MS);

  const EXPECTED: Array<[string, Rendering, string[]]> = [
    ['qwen3', 'model-template', ['<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{"name": "']],
    ['gemma3', 'gemma3-tools', ['<start_of_turn>user\n', '```tool_output\n', '<end_of_turn>\n<start_of_turn>model\n```tool_call\n{"name": "']],
    ['llama3', 'llama3-tools', ['Environment: ipython', '<|start_header_id|>ipython<|end_header_id|>\n\n', '<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{"name": "']],
    ['llama3.2', 'llama3-tools', ['<|start_header_id|>ipython<|end_header_id|>\n\n']],
    ['smollm2', 'chatml-tools', ['<|im_start|>tool\n<tool_response>\n', '<|im_start|>assistant\n<tool_call>\n{"name": "']],
    ['phi3.5', 'phi3-tools', ['<|user|>\n<tool_response>\n', '<|end|>\n<|assistant|>\n<tool_call>\n{"name": "']],
  ];

  for (const [family, rendering, marks] of EXPECTED) {
    it(`${family}: "${rendering}", every message, tool and argument of the MCP, travel and long cases rendered in the family's turn format`, async () => {
      const chosen = renderingFor(tokenizers.get(family)!);
      expect(chosen.rendering).toBe(rendering);
      for (const input of Object.values(CASES)) {
        const { context } = await expectWholeRender(chosen.tokenizer, chosen.rendering, input);
        for (const mark of marks) expect(context).toContain(mark);
      }
    });
  }

  it("says why each family's own template was set aside: Gemma 3 raises on a tool turn, Llama 3.2 on parallel calls, SmolLM2, Phi-3.5 and Llama 3 drop parts", () => {
    expect(templateProblem(tokenizers.get('qwen3')!, 'model-template')).toBeNull();
    expect(templateProblem(tokenizers.get('gemma3')!, 'model-template')).toMatch(/Conversation roles must alternate/);
    expect(templateProblem(tokenizers.get('llama3.2')!, 'model-template')).toMatch(/only supports single tool-calls at once/);
    expect(templateProblem(tokenizers.get('smollm2')!, 'model-template')).toMatch(/left out of what the proxy would read: the call to "probe_lookup" in messages\[2\], the call to "probe_fetch" in messages\[2\], tool "probe_lookup"/);
    expect(templateProblem(tokenizers.get('phi3.5')!, 'model-template')).toMatch(/left out of what the proxy would read: .*messages\[3\] \(tool\), messages\[4\] \(tool\)/);
    expect(templateProblem(tokenizers.get('llama3')!, 'model-template')).toMatch(/left out of what the proxy would read: the call to "probe_lookup"/);
  });

  it('scores an ordinary Qwen3 conversation ending in an assistant turn with text and a call, without the empty think block or the call marker', async () => {
    const qwen = tokenizers.get('qwen3')!;
    const travel = CASES.travel;
    const input: GuardInput = { ...travel, messages: [...travel.messages, { role: 'assistant', content: 'I found the flights; booking the cheapest now.' }] };
    const ctx = contextOf(input);
    const call = await encodeTemplateCall(qwen, ctx, 'template', 16_384);
    expect(call.action.text.startsWith(`${ctx.action.name}", "arguments": {`)).toBe(true);
    expect(call.action.text).not.toMatch(/<think>|<\/think>|<tool_call>/);
    // The earlier assistant turn keeps its text (as the context redacts it); the scaffolding is the last turn's, in the context.
    const context = qwen.decode(call.contextIds(ctx.messages.map((_, i) => i), new Set()));
    expect(context.endsWith(`${ctx.messages.at(-1)!.content}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n<tool_call>\n{"name": "`)).toBe(true);
  });

  it('refuses, naming what is missing, a raw template that would drop a tool result or the tools (SmolLM2, Phi-3.5, Gemma 3) instead of scoring it', async () => {
    const ctx = contextOf(CASES.travel);
    const smol = tokenizers.get('smollm2')!;
    for (const actionText of ['raw', 'template'] as const) {
      const refused = encodeTemplateCall(smol, ctx, actionText, 16_384, 'custom-template');
      await expect(refused).rejects.toThrow(InferenceError);
      await expect(refused).rejects.toThrow(/rendering "custom-template"\) left out of what the proxy would read: the call to "search_flights" in messages\[2\], tool "search_hotels"/);
    }
    const phi = createProxyTokenizer(phiLikeTokenizerFiles()).withChatTemplate(PHI35_TEMPLATE);
    await expect(encodeTemplateCall(phi, ctx, 'raw', 16_384, 'custom-template')).rejects.toThrow(/left out of what the proxy would read: the call to "search_flights" in messages\[2\], messages\[3\] \(tool\), tool "search_hotels"/);
    await expect(encodeTemplateCall(tokenizers.get('gemma3')!, ctx, 'template', 16_384, 'custom-template')).rejects.toThrow(/could not render this conversation: Conversation roles must alternate/);
  });

  it('writes parallel calls, which Llama 3.2 refuses, one JSON object a line in the llama3-tools rendering', async () => {
    const { tokenizer } = renderingFor(tokenizers.get('llama3.2')!);
    const travel = CASES.travel;
    const parallel: GuardInput = {
      ...travel,
      messages: travel.messages.map((m) => (m.role === 'assistant' && m.tool_calls?.length ? { ...m, tool_calls: [...m.tool_calls, { name: 'search_hotels', arguments: { city: 'Lisbon' } }] } : m)),
    };
    const { context } = await expectWholeRender(tokenizer, 'llama3-tools', parallel);
    expect(context).toMatch(/\{"name": "search_flights", "parameters": \{[^\n]*\}\}\n\{"name": "search_hotels", "parameters": \{"city": "Lisbon"\}\}<\|eot_id\|>/);
  });
});

/** A copy of a family fixture whose own chat template is `template`, manifest re-pinned (q4 only). */
async function withOwnTemplate(dir: string, template: string): Promise<string> {
  const out = mkdtempSync(join(tmpdir(), 'family-'));
  mkdirSync(join(out, 'onnx'));
  for (const f of ['config.json', 'tokenizer.json', 'onnx/model_q4.onnx']) copyFileSync(join(dir, f), join(out, f));
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
  writeFileSync(join(out, 'tokenizer_config.json'), JSON.stringify({ ...config, chat_template: template }));
  writeFileSync(join(out, 'manifest.json'), JSON.stringify(await buildManifest(out, 'tiny-smollm2-template')));
  return out;
}

describe.skipIf(!CAN_BUILD_FAMILY_MODELS)('model verdicts on random-weight decoders with real vocabularies', () => {
  const EXPECTED: Record<Family, Rendering> = { qwen3: 'model-template', gemma3: 'gemma3-tools', llama3: 'llama3-tools' };
  // The long check is scored on the largest vocabulary (the scorer keeps the logits of the action's positions
  // only); every family's long check is rendered whole above, and Qwen3's is scored in family-fused.test.ts.
  const LONG_CHECK_FAMILY: Family = 'gemma3';
  const guards: Array<{ dispose(): Promise<void> }> = [];
  afterAll(async () => {
    for (const g of guards) await g.dispose();
  });

  for (const family of Object.keys(EXPECTED) as Family[]) {
    it(
      `${family}: every MCP and travel check${family === LONG_CHECK_FAMILY ? ', and the long one,' : ''} is a model verdict in which each tool result, description and user request moves the call`,
      async () => {
        const guard = createNodeGuard({ modelDir: familyModelDir(family), modelVariant: 'q4', backends: ['node'], timeoutMs: CHECK_TIMEOUT_MS });
        guards.push(guard);
        expect(await guard.ready).toMatchObject({ rendering: EXPECTED[family], variant: 'q4' });
        for (const [name, input] of Object.entries(MODEL_CASES)) {
          if (name === 'long' && family !== LONG_CHECK_FAMILY) continue;
          const v = await guard.check(input);
          expect(v, `${family} ${name}: ${v.error?.message ?? ''}`).toMatchObject({ reason: 'model', rendering: EXPECTED[family] });
          const variants = v.attribution!.variants;
          const kinds = new Set(variants.map((x) => x.kind));
          expect([...kinds]).toEqual(expect.arrayContaining(['no-user', 'no-span', 'no-tool']));
          for (const x of variants) if (x.kind !== 'full') expect(Math.abs(x.rawDelta), `${family} ${name} ${x.id}`).toBeGreaterThan(NO_MOVEMENT);
          expect(variants.filter((x) => x.kind === 'no-tool')).toHaveLength(input.tools!.length);
        }
      },
      MODEL_TIMEOUT_MS,
    );
  }

  it(
    'qwen3: MindGuard reads the attention rows at the positions of the rendered tool definitions and argument values',
    async () => {
      const guard = createNodeGuard({ modelDir: familyModelDir('qwen3'), modelVariant: 'q4', backends: ['node'], timeoutMs: CHECK_TIMEOUT_MS });
      guards.push(guard);
      const v = await guard.check(inputOf(findCase('banking', 'poisoning', 1)!));
      expect(v.reason).toBe('model');
      expect(v.toolPoisoning!.unavailable).toEqual([]);
      const attention = v.toolPoisoning!.attention!;
      expect(attention.air.length).toBeGreaterThan(0);
      expect(attention.nodes.filter((n) => n.kind === 'target-data')[0]!.tokenCount).toBeGreaterThan(0);
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    "a model whose own template is SmolLM2's gets the chatml-tools rendering and a model verdict; forcing the raw template refuses the check",
    async () => {
      const dir = await withOwnTemplate(familyModelDir('qwen3'), SMOLLM2_TEMPLATE);
      const shipped = createNodeGuard({ modelDir: dir, modelVariant: 'q4', backends: ['node'], timeoutMs: CHECK_TIMEOUT_MS, actionText: 'raw' });
      const forced = createNodeGuard({ modelDir: dir, modelVariant: 'q4', backends: ['node'], timeoutMs: CHECK_TIMEOUT_MS, actionText: 'raw', chatTemplate: SMOLLM2_TEMPLATE });
      guards.push(shipped, forced);
      const scored = await shipped.check(CASES.travel);
      expect(scored).toMatchObject({ reason: 'model', rendering: 'chatml-tools' });
      expect(Math.abs(scored.attribution!.spans[0]!.rawDelta)).toBeGreaterThan(NO_MOVEMENT);
      const refused = await forced.check(CASES.travel);
      expect(refused).toMatchObject({ reason: 'failure-policy', decision: 'block', rendering: 'custom-template', error: { code: 'inference-failed' } });
      expect(refused.error!.message).toMatch(/left out of what the proxy would read: the call to "search_flights" in messages\[2\]/);
    },
    MODEL_TIMEOUT_MS,
  );
});
