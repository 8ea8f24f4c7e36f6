/**
 * A guard call as token ids: the context of each ablation variant, the scored action, where each
 * component sits, and what the truncation policy cut. Two encoders produce it: EdgeArmor's own
 * chat format (segments joined by control tokens, here) and any model's chat template
 * (template-format.ts).
 */
import { ContextTooLongError } from '../core/errors.js';
import type { ActionTokenPart } from '../core/attribution.js';
import type { StructuredContext } from '../core/context.js';
import type { TruncationReport } from '../core/verdict.js';
import type { ContextSizes } from '../core/windows.js';
import type { ActionTextMode } from '../core/options.js';
import { callJson, encodeActionCall, encodeActionRaw, encodeBos, encodeMessage, encodeToolDef, formatJson, type EncodedAction } from './chat-format.js';
import { yieldToEventLoop } from '../core/long-texts.js';
import { callSentenceTokens, callTerms, planMessageCut } from '../core/sentence-cut.js';
import type { ProxyTokenizer } from './tokenizer.js';

/** Token ranges of the full context, for MindGuard (half-open, in sequence positions). */
export interface ContextLayout {
  user: Array<{ start: number; end: number }>;
  tools: Array<{ tool: string; start: number; end: number }>;
  toolResults: Array<{ messageIndex: number; start: number; end: number }>;
  actionStart: number;
}

/** What was cut to fit the context window. */
export type { TruncationReport };

/** Where the parts of a template-rendered action sit among its tokens. */
export interface ActionLayout {
  /** Part label per token: 'name' while it still covers `{"name": "<tool name>"`, then 'arguments'. */
  parts: ActionTokenPart[];
  /** Token rows of the argument VALUES (MindGuard's data-flow target), half-open; `value` is the value's index in the call's arguments. */
  valueRows: Array<{ start: number; end: number; value: number }>;
}

/** One message's text changed in a variant: replaced (sentence ablations of `defend`), or without the sentences that name the call (a `no-call-sentences` variant). */
export type MessageEdit = { messageIndex: number; content: string } | { messageIndex: number; dropCallSentences: true };

/** The ids of a text (as scored: after any cut) without the tokens of its sentences that name the call (core/sentence-cut.ts). */
export function dropCallSentenceIds(ids: readonly number[], decodeToken: (id: number) => string, terms: readonly string[]): number[] {
  const drop = new Set(callSentenceTokens(ids.map(decodeToken), terms).flat());
  return ids.filter((_, k) => !drop.has(k));
}

/** One guard call, encoded. */
export interface EncodedCall {
  /** The scored action; `prefix` follows every variant's context. */
  action: EncodedAction;
  /** Context ids of a variant: the kept messages, the tool list without `dropTools`, one message's text edited. */
  contextIds(keep: readonly number[], dropTools: ReadonlySet<string>, edit?: MessageEdit): number[];
  /** Where each component sits in the full variant's sequence. */
  layout: ContextLayout;
  truncation: TruncationReport;
  /** Part labels of the action's tokens; undefined when the encoding cannot label them. */
  actionLayout: ActionLayout | undefined;
  /** Each part's tokens before any cut (core/windows.ts plans windows from them); set by EdgeArmor's format, which encodes the parts one by one. */
  sizes?: ContextSizes;
}

/** Byte ranges of the argument values in `callJson(name, args)`. */
function valueByteRanges(name: string, args: unknown): Array<[number, number]> {
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  let offset = bytes(`{"name": ${JSON.stringify(name)}, "arguments": `);
  if (args === null || typeof args !== 'object' || Array.isArray(args)) {
    return [[offset, offset + bytes(formatJson(args))]];
  }
  offset += 1; // "{"
  const ranges: Array<[number, number]> = [];
  // The same values, in the same order, as core's argumentValueList: a row's `value` indexes both.
  Object.entries(args as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .forEach(([k, v], i) => {
      if (i > 0) offset += 2; // ", "
      offset += bytes(`${JSON.stringify(k)}: `);
      const len = bytes(formatJson(v));
      ranges.push([offset, offset + len]);
      offset += len;
    });
  return ranges;
}

/** Labels the action's tokens (name vs arguments) and finds the rows of its argument values. */
export function actionLayout(tokenizer: Pick<ProxyTokenizer, 'tokenByteLength'>, ids: readonly number[], name: string, args: unknown): ActionLayout {
  const nameEnd = new TextEncoder().encode(`{"name": ${JSON.stringify(name)}`).length;
  const values = valueByteRanges(name, args);
  const parts: ActionTokenPart[] = [];
  const valueRows: Array<{ start: number; end: number; value: number }> = [];
  let offset = 0;
  ids.forEach((id, row) => {
    const end = offset + tokenizer.tokenByteLength(id);
    parts.push(offset < nameEnd ? 'name' : 'arguments');
    const value = values.findIndex(([a, b]) => offset < b && end > a);
    if (value >= 0) {
      const last = valueRows[valueRows.length - 1];
      if (last && last.end === row && last.value === value) last.end = row + 1;
      else valueRows.push({ start: row, end: row + 1, value });
    }
    offset = end;
  });
  return { parts, valueRows };
}

/** A message longer than this many tokens is encoded, and cut, in a task of its own (tens of ms each for the longest texts the character cut lets through). */
const YIELD_BEFORE_CUT_TOKENS = 8_192;

/** Messages are never cut below this many tokens. */
export const MIN_KEPT_MESSAGE_TOKENS = 32;

/**
 * The truncation policy, applied once to the full context so every variant sees the same text:
 * 1) cut non-user messages longer than a quarter of the window down to that; 2) drop tool
 * definitions; 3) cut the longest non-user message (tool results, assistant text,
 * system prompt), never below 32 tokens, keeping first the sentences that name the proposed call and
 * then its head and tail (core/sentence-cut.ts; a plain middle cut without `pieces`); never touch user
 * turns or the action. `total()` measures the current full sequence; `messageIds` are cut in place;
 * `pieces` gives each token's text. Yields to the event loop before cutting a long message (tens of ms
 * each for the longest texts the character cut lets through), so seven of them do not block the host.
 */
export async function truncateToFit(
  context: StructuredContext,
  messageIds: number[][],
  budget: number,
  total: () => number,
  dropTools: () => boolean,
  pieces?: (ids: readonly number[]) => string[],
): Promise<TruncationReport> {
  const terms = callTerms(context.action);
  const truncation: TruncationReport = { droppedToolDefinitions: false, shortenedMessages: {} };
  /** Cuts the longest non-user message longer than `floor` tokens to fit, not below `floor`; false when there is none. */
  const cutLongest = async (floor: number): Promise<boolean> => {
    let longest = -1;
    context.messages.forEach((m, i) => {
      if (m.role !== 'user' && messageIds[i]!.length > floor && (longest < 0 || messageIds[i]!.length > messageIds[longest]!.length)) longest = i;
    });
    if (longest < 0) return false;
    const ids = messageIds[longest]!;
    if (ids.length > YIELD_BEFORE_CUT_TOKENS) await yieldToEventLoop();
    const keep = Math.max(floor, ids.length - (total() - budget));
    const cut = planMessageCut(pieces ? pieces(ids) : ids.map(() => ''), keep, pieces ? terms : []);
    messageIds[longest] = cut.kept.map((i) => ids[i]!);
    truncation.shortenedMessages[longest] = (truncation.shortenedMessages[longest] ?? 0) + ids.length - keep;
    if (cut.callSentences > 0) (truncation.keptCallSentences ??= {})[longest] = (truncation.keptCallSentences[longest] ?? 0) + cut.callSentences;
    return true;
  };
  // The tool list stays while messages longer than a quarter of the window can give way: a padded result costs its padding, not the tool list.
  while (total() > budget && (await cutLongest(Math.max(MIN_KEPT_MESSAGE_TOKENS, Math.floor(budget / 4)))));
  if (total() > budget && dropTools()) truncation.droppedToolDefinitions = true;
  while (total() > budget) {
    if (!(await cutLongest(MIN_KEPT_MESSAGE_TOKENS))) {
      throw new ContextTooLongError(
        `the context needs ${total()} tokens after truncation, more than the model's ${budget}: user messages and the action alone do not fit`,
        { tokens: total(), maxContextTokens: budget },
      );
    }
  }
  return truncation;
}

/** Encodes a guard call in EdgeArmor's chat format: every variant is a concatenation of per-message segments. */
export async function encodeSegmentedCall(tokenizer: ProxyTokenizer, context: StructuredContext, actionText: ActionTextMode, budget: number): Promise<EncodedCall> {
  const action =
    actionText === 'raw'
      ? encodeActionRaw(tokenizer, context.action.raw_text ?? callJson(context.action.name, context.action.arguments))
      : encodeActionCall(tokenizer, context.action.name, context.action.arguments);
  const bos = encodeBos(tokenizer);
  const terms = callTerms(context.action);
  let toolIds = context.tools.map((t) => encodeToolDef(tokenizer, t));
  const messageIds: number[][] = [];
  for (const m of context.messages) {
    const ids = encodeMessage(tokenizer, m);
    messageIds.push(ids);
    if (ids.length > YIELD_BEFORE_CUT_TOKENS) await yieldToEventLoop();
  }
  const total = () =>
    bos.length + toolIds.reduce((a, t) => a + t.length, 0) + messageIds.reduce((a, m) => a + m.length, 0) + action.prefix.length + action.ids.length;
  const sizes: ContextSizes = { fixed: bos.length + action.prefix.length + action.ids.length, tools: toolIds.map((t) => t.length), messages: messageIds.map((m) => m.length) };
  const truncation = await truncateToFit(
    context,
    messageIds,
    budget,
    total,
    () => {
      if (toolIds.length === 0) return false;
      toolIds = [];
      return true;
    },
    (ids) => ids.map((id) => tokenizer.decodeToken(id)),
  );

  const layout: ContextLayout = { user: [], tools: [], toolResults: [], actionStart: 0 };
  let pos = bos.length;
  toolIds.forEach((ids, i) => {
    layout.tools.push({ tool: context.tools[i]!.name, start: pos, end: pos + ids.length });
    pos += ids.length;
  });
  messageIds.forEach((ids, i) => {
    const role = context.messages[i]!.role;
    if (role === 'user') layout.user.push({ start: pos, end: pos + ids.length });
    if (role === 'tool') layout.toolResults.push({ messageIndex: i, start: pos, end: pos + ids.length });
    pos += ids.length;
  });
  layout.actionStart = pos + action.prefix.length;

  return {
    action,
    contextIds(keep, dropTools, edit) {
      const tools = toolIds.filter((_, i) => !dropTools.has(context.tools[i]!.name));
      const messages = keep.map((i) => {
        if (edit?.messageIndex !== i) return messageIds[i]!;
        if ('content' in edit) return encodeMessage(tokenizer, { ...context.messages[i]!, content: edit.content });
        // The text between the message's last header control token and its closing <|end|> (control tokens never come from text).
        const ids = messageIds[i]!;
        let start = ids.length - 2;
        while (start >= 0 && !tokenizer.isControlId(ids[start]!)) start -= 1;
        const text = ids.slice(start + 1, -1);
        return [...ids.slice(0, start + 1), ...dropCallSentenceIds(text, (id) => tokenizer.decodeToken(id), terms), ids[ids.length - 1]!];
      });
      return [...bos, ...tools.flat(), ...messages.flat()];
    },
    layout,
    truncation,
    actionLayout: actionText === 'raw' ? undefined : actionLayout(tokenizer, action.ids, context.action.name, context.action.arguments),
    sizes,
  };
}

/** Tokens a chat template adds around one message or tool beyond its text (an estimate; the window planner's margin covers the rest). */
const TEMPLATE_PART_OVERHEAD_TOKENS = 8;

/**
 * What each part of a context costs in tokens when a chat template renders it (the template renders the
 * conversation whole, so its parts are not counted one by one): each text's tokens plus
 * TEMPLATE_PART_OVERHEAD_TOKENS. EdgeArmor's format counts them exactly (EncodedCall.sizes).
 */
export function templateContextSizes(tokenizer: ProxyTokenizer, context: StructuredContext): ContextSizes {
  const tokens = (text: string) => tokenizer.encodeText(text).length + TEMPLATE_PART_OVERHEAD_TOKENS;
  return {
    fixed: tokens(context.action.raw_text ?? callJson(context.action.name, context.action.arguments)),
    tools: context.tools.map((t) => tokens(`${t.name} ${t.description} ${formatJson(t.parameters ?? {})}`)),
    messages: context.messages.map((m) => tokens(`${m.tool_name ?? ''}${m.content}${(m.tool_calls ?? []).map((c) => callJson(c.name, c.arguments)).join('')}`)),
  };
}
