/**
 * CausalArmor as its public reference implementation (v0.1.2) does it, on EdgeArmor's proxy model,
 * as a baseline: plain-text "Role: text" prompts instead of the chat template, U = the LAST user
 * message only, no pre-scoring CoT masking (the brief's setting; the reference's own default masks),
 * the whole prompt tokenised at once so the leading space joins the first action token, and the
 * action's token count ESTIMATED as len(raw_text) // 4. See reference/causalarmor.md, defects 2-4, 6.
 */
import { buildContext } from '../core/context.js';
import { resolveOptions } from '../core/options.js';
import type { GuardInput, Message } from '../core/types.js';
import type { EvalMethod, MethodResult } from './methods.js';

/** Tokenises text and scores token sequences: the two things the baseline needs from a model. */
export interface ReferenceScorer {
  encode(text: string): number[];
  /** Per sequence, the log-prob of each action token given the context tokens before it. */
  score(sequences: ReadonlyArray<{ context: number[]; action: number[] }>): Promise<Float64Array[]>;
  /** Longest sequence the model takes. */
  maxTokens: number;
}

/** One plain-text variant of the prompt. */
export interface ReferenceVariant {
  /** 'full', 'no-user', or 'no-span:<message index>'. */
  id: string;
  /** The context lines followed by "\nAssistant: " and the action's raw text. */
  prompt: string;
  /** Where the action text starts in `prompt` (after "Assistant: "). */
  actionStart: number;
}

/** The reference's prompts for one case. */
export interface ReferencePrompts {
  actionText: string;
  /** len(actionText) // 4 in code points, at least 1: the reference's estimate of the action's token count. */
  estimatedTokenCount: number;
  /** Index of the user message that is U. */
  userIndex: number;
  /** Message indexes of the untrusted tool results, one span each. */
  spanIndexes: number[];
  variants: ReferenceVariant[];
}

/** Renders one message as the reference's plain-text line. */
export function plainTextLine(m: Message): string {
  switch (m.role) {
    case 'system':
      return `System: ${m.content}`;
    case 'user':
      return `User: ${m.content}`;
    case 'assistant': {
      const calls = (m.tool_calls ?? []).map((c) => JSON.stringify({ name: c.name, arguments: c.arguments }));
      return `Assistant: ${[m.content, ...calls].filter((x) => x !== '').join(' ')}`;
    }
    case 'tool':
      return m.tool_name ? `Tool (${m.tool_name}): ${m.content}` : `Tool: ${m.content}`;
  }
}

/** The action's raw text as the agent produced it, or its JSON when the case has none. */
export function referenceActionText(input: GuardInput): string {
  return input.action.raw_text ?? JSON.stringify({ name: input.action.name, arguments: input.action.arguments });
}

/** The reference's token-count estimate: Python's len(text) // 4 (code points), floored at 1. */
export function estimateTokenCount(text: string): number {
  return Math.max(1, Math.floor([...text].length / 4));
}

const DEFAULT_RESOLVED = resolveOptions({});

/** Builds the full, no-user and no-span prompts; ablation deletes the message, earlier user turns stay. */
export function buildReferencePrompts(input: GuardInput, messages: readonly Message[] = input.messages): ReferencePrompts {
  // The trust policy is EdgeArmor's safe default (the case's untrusted_tools, else every tool result), not the
  // reference's "unset list = no spans", which would make this baseline never flag (defect 1).
  const spans = buildContext({ ...input, messages: [...messages] }, DEFAULT_RESOLVED).spans.map((s) => s.messageIndex);
  const userIndex = messages.map((m) => m.role).lastIndexOf('user');
  const actionText = referenceActionText(input);
  const render = (drop: number | null): ReferenceVariant & { id: string } => {
    const context = messages.filter((_, i) => i !== drop).map(plainTextLine).join('\n');
    const head = `${context}\nAssistant: `;
    return { id: '', prompt: head + actionText, actionStart: head.length };
  };
  const variants: ReferenceVariant[] = [
    { ...render(null), id: 'full' },
    { ...render(userIndex), id: 'no-user' },
    ...spans.map((i) => ({ ...render(i), id: `no-span:${i}` })),
  ];
  return { actionText, estimatedTokenCount: estimateTokenCount(actionText), userIndex, spanIndexes: spans, variants };
}

/** Splits a whole-prompt tokenisation into context and action ids: the action is every token after the longest common prefix with the context's own tokenisation (so a space-joined first token counts as action, as in the reference). */
export function splitAtAction(encode: (text: string) => number[], v: ReferenceVariant): { context: number[]; action: number[] } {
  const full = encode(v.prompt);
  const head = encode(v.prompt.slice(0, v.actionStart).trimEnd());
  let k = 0;
  while (k < head.length && k < full.length && head[k] === full[k]) k++;
  return { context: full.slice(0, k), action: full.slice(k) };
}

/** The reference's decision from summed log-probs: dX = (lp_full - lp_noX) / estimate; flag span iff dS > dU - tau; score = max(dS - dU). */
export function referenceDecision(
  prompts: Pick<ReferencePrompts, 'estimatedTokenCount' | 'spanIndexes'>,
  logProbs: ReadonlyMap<string, number>,
  tau = 0,
): Pick<MethodResult, 'score' | 'detected' | 'flaggedMessages' | 'userDelta' | 'spans'> {
  const full = logProbs.get('full')!;
  const n = prompts.estimatedTokenCount;
  const dU = (full - logProbs.get('no-user')!) / n;
  const spans = prompts.spanIndexes.map((i) => {
    const d = (full - logProbs.get(`no-span:${i}`)!) / n;
    return { messageIndex: i, toolName: null, delta: d, score: d - dU, flagged: d > dU - tau };
  });
  return {
    score: spans.length === 0 ? null : Math.max(...spans.map((s) => s.score)),
    detected: spans.some((s) => s.flagged),
    flaggedMessages: spans.filter((s) => s.flagged).map((s) => s.messageIndex),
    userDelta: dU,
    spans,
  };
}

/** Shortens the middle of the longest non-user message's text until the full prompt fits the model (the reference never truncates: its proxy has a 128k window). */
function fitToWindow(input: GuardInput, scorer: ReferenceScorer): Message[] | null {
  let messages = input.messages.map((m) => ({ ...m }));
  for (let round = 0; round < 12; round++) {
    const full = buildReferencePrompts(input, messages).variants[0]!;
    const tokens = scorer.encode(full.prompt).length;
    if (tokens <= scorer.maxTokens) return messages;
    let longest = -1;
    messages.forEach((m, i) => {
      if (m.role !== 'user' && (longest < 0 || m.content.length > messages[longest]!.content.length)) longest = i;
    });
    if (longest < 0 || messages[longest]!.content.length < 64) return null;
    const text = messages[longest]!.content;
    const keep = Math.max(32, Math.floor(text.length - ((tokens - scorer.maxTokens) * text.length) / tokens) - 16);
    const head = Math.ceil(keep / 2);
    messages = messages.map((m, i) => (i === longest ? { ...m, content: text.slice(0, head) + text.slice(text.length - (keep - head)) } : m));
  }
  return null;
}

/** The reference CausalArmor baseline over a scorer (the proxy engine in the CLI, a fake in tests). */
export function createReferenceCausalArmor(scorer: ReferenceScorer, tau = 0): EvalMethod {
  return {
    name: 'reference-causalarmor',
    description: 'CausalArmor as the reference implements it: plain-text prompts, last user message as U, no pre-scoring masking, len//4 token estimate',
    async evaluate(c) {
      const empty: MethodResult = { score: null, detected: false, flaggedMessages: [], flaggedTools: null, userDelta: null, spans: [] };
      let prompts: ReferencePrompts;
      try {
        prompts = buildReferencePrompts(c.input);
      } catch (e) {
        return { ...empty, error: (e as Error).message };
      }
      if (prompts.spanIndexes.length === 0) return { ...empty, reason: 'no-untrusted-spans' };
      const messages = fitToWindow(c.input, scorer);
      if (messages === null) return { ...empty, error: `context-too-long: the plain-text prompt does not fit ${scorer.maxTokens} tokens` };
      prompts = buildReferencePrompts(c.input, messages);
      const sequences = prompts.variants.map((v) => splitAtAction(scorer.encode, v));
      const scores = await scorer.score(sequences);
      const logProbs = new Map(prompts.variants.map((v, i) => [v.id, scores[i]!.reduce((a, b) => a + b, 0)]));
      const decision = referenceDecision(prompts, logProbs, tau);
      const names = new Map(prompts.spanIndexes.map((i) => [i, c.input.messages[i]!.tool_name ?? null]));
      return { ...decision, flaggedTools: null, spans: decision.spans.map((s) => ({ ...s, toolName: names.get(s.messageIndex) ?? null })) };
    },
  };
}
