/**
 * A guard call encoded with the proxy's own chat template (Qwen, Llama, Mistral...), for models
 * that do not speak EdgeArmor's chat format.
 *
 * Every message's text enters the template as a sentinel; the rendered text between sentinels is
 * the template's own and is encoded with its control tokens, while each message's text is encoded
 * as plain text (never a control token) and put in the sentinel's place. Strings the template
 * prints itself (tool names, descriptions, schemas, call arguments) are rendered as given, after
 * any control-token literal in them is broken with a word joiner (U+2060), and the call is checked:
 * the rendered text must contain exactly the control tokens of the same render with those strings
 * blanked. Variants are whole re-renders without the ablated messages or tool descriptions.
 */
import { InferenceError } from '../core/errors.js';
import type { StructuredContext } from '../core/context.js';
import type { ActionTextMode } from '../core/options.js';
import type { Message, ToolSpec } from '../core/types.js';
import { callJson } from './chat-format.js';
import { dropCallSentenceIds, truncateToFit, type ContextLayout, type EncodedCall } from './call-encoding.js';
import { callTerms } from '../core/sentence-cut.js';
import type { ProxyTokenizer, TemplateMessage } from './tokenizer.js';

const WORD_JOINER = '\u2060';

/** Breaks every control-token literal in the strings of `value` (deep), so the tokenizer reads them as text. */
export function neutralizeControls<T>(value: T, controls: readonly string[]): T {
  const literals = controls.filter((c) => c.length > 1);
  const fix = (s: string) => literals.reduce((acc, lit) => (acc.includes(lit) ? acc.split(lit).join(lit[0] + WORD_JOINER + lit.slice(1)) : acc), s);
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return fix(v);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [fix(k), walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** Replaces every string value (deep) but `type` fields with "x": the control-token baseline of the safety check. */
function blankStrings<T>(value: T): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return 'x';
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, k === 'type' ? x : walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/** A message with its text kept (a sentinel) and every other string blanked. */
function blankMessage(m: TemplateMessage & { name?: string }): TemplateMessage {
  const { role, content, ...rest } = m;
  return { role, content, ...blankStrings(rest) };
}

type Part = { text: string } | { message: number };

/** Encodes a guard call with the tokenizer's chat template. */
export async function encodeTemplateCall(tokenizer: ProxyTokenizer, context: StructuredContext, actionText: ActionTextMode, budget: number): Promise<EncodedCall> {
  const nonce = Array.from(globalThis.crypto.getRandomValues(new Uint8Array(6)), (b) => b.toString(16).padStart(2, '0')).join('');
  const sentinel = (i: number) => `\uE000${nonce}:${i}\uE001`;
  const sentinelPattern = new RegExp(`\\uE000${nonce}:(\\d+)\\uE001`, 'g');
  const controls = tokenizer.controlTokens;

  type TemplateCall = NonNullable<TemplateMessage['tool_calls']>[number];
  const toolCalls = (calls: Message['tool_calls']): TemplateCall[] =>
    (calls ?? []).map((c) => neutralizeControls({ type: 'function', name: c.name, arguments: c.arguments, function: { name: c.name, arguments: c.arguments } }, controls));
  const templateTools = (tools: readonly ToolSpec[]) =>
    tools.map((t) => neutralizeControls({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }, controls));
  const templateMessage = (m: Message, i: number): TemplateMessage => {
    const out: TemplateMessage & { name?: string } = { role: m.role, content: m.content === '' ? '' : sentinel(i) };
    if (m.tool_calls?.length) out.tool_calls = toolCalls(m.tool_calls);
    if (m.role === 'tool') {
      const name = neutralizeControls(m.tool_name ?? '', controls);
      out.tool_name = name;
      out.name = name;
    }
    return out;
  };

  const render = (messages: TemplateMessage[], tools: unknown[], generationPrompt: boolean): string => {
    try {
      return tokenizer.renderChatTemplate(messages, tools.length > 0 ? tools : undefined, generationPrompt);
    } catch (e) {
      throw new InferenceError(`the proxy's chat template could not render this conversation: ${(e as Error).message}`, { stage: 'chat-template' });
    }
  };
  const split = (text: string): Part[] => {
    const parts: Part[] = [];
    let last = 0;
    for (const m of text.matchAll(sentinelPattern)) {
      if (m.index > last) parts.push({ text: text.slice(last, m.index) });
      parts.push({ message: Number(m[1]) });
      last = m.index + m[0].length;
    }
    if (last < text.length) parts.push({ text: text.slice(last) });
    return parts;
  };
  const textIds = new Map<string, number[]>();
  const encodeTemplateText = (text: string): number[] => {
    let ids = textIds.get(text);
    if (!ids) textIds.set(text, (ids = tokenizer.encodeRendered(text)));
    return ids;
  };
  const controlCount = (text: string) => split(text).reduce((n, p) => n + ('text' in p ? encodeTemplateText(p.text).filter((id) => tokenizer.isControlId(id)).length : 0), 0);

  const allMessages = context.messages.map(templateMessage);
  let tools = templateTools(context.tools);

  // The action: what the template adds after the generation prompt for this call. Leading control
  // tokens (the template's call marker) join the prompt and trailing ones (end of turn) are not
  // scored, as in EdgeArmor's format, where the action is the call's JSON alone.
  const withGeneration = render(allMessages, tools, true);
  let prefix: number[] = [];
  let actionIds: number[];
  if (actionText === 'raw') {
    actionIds = tokenizer.encodeText(context.action.raw_text ?? callJson(context.action.name, context.action.arguments));
  } else {
    const callMessage: TemplateMessage = { role: 'assistant', content: '', tool_calls: toolCalls([context.action]) };
    const withCall = render([...allMessages, callMessage], tools, false);
    if (!withCall.startsWith(withGeneration)) {
      throw new InferenceError("the proxy's chat template does not render a tool call as the continuation of its generation prompt, so the call cannot be scored in template mode; use actionText: 'raw'", {
        stage: 'chat-template',
      });
    }
    const remainder = withCall.slice(withGeneration.length);
    if (controlCount(remainder) !== controlCount(render([...allMessages, blankMessage(callMessage)], tools, false).slice(withGeneration.length))) {
      throw new InferenceError('the tool call rendered with more control tokens than the template writes: refusing to score it', { stage: 'chat-template' });
    }
    const ids = tokenizer.encodeRendered(remainder);
    let start = 0;
    while (start < ids.length && tokenizer.isControlId(ids[start]!)) start++;
    let end = ids.length;
    while (end > start && (tokenizer.isControlId(ids[end - 1]!) || tokenizer.decodeToken(ids[end - 1]!).trim() === '')) end--;
    prefix = ids.slice(0, start);
    actionIds = ids.slice(start, end);
  }
  if (actionIds.length === 0) throw new InferenceError('the proxy\'s chat template rendered the tool call as no scorable tokens', { stage: 'chat-template' });
  if (controlCount(withGeneration) !== controlCount(render(allMessages.map(blankMessage), blankStrings(tools), true))) {
    throw new InferenceError('the tool list or an earlier tool call rendered with more control tokens than the template writes: refusing to score it', { stage: 'chat-template' });
  }

  const contentIds = context.messages.map((m) => (m.content === '' ? [] : tokenizer.encodeText(m.content)));
  const assemble = (parts: Part[], contents: (i: number) => number[]): number[] => parts.flatMap((p) => ('text' in p ? encodeTemplateText(p.text) : contents(p.message)));
  const renderIds = (keep: readonly number[], toolList: unknown[], contents: (i: number) => number[]) =>
    assemble(split(render(keep.map((i) => allMessages[i]!), toolList, true)), contents);
  const all = context.messages.map((_, i) => i);
  const total = () => renderIds(all, tools, (i) => contentIds[i]!).length + prefix.length + actionIds.length;
  const truncation = await truncateToFit(
    context,
    contentIds,
    budget,
    total,
    () => {
      if (tools.length === 0) return false;
      tools = [];
      return true;
    },
    (ids) => ids.map((id) => tokenizer.decodeToken(id)),
  );

  // Layout of the full variant: message texts by position (the template's own tokens around them are not attributed).
  const layout: ContextLayout = { user: [], tools: [], toolResults: [], actionStart: 0 };
  let pos = 0;
  for (const p of split(render(allMessages, tools, true))) {
    const n = 'text' in p ? encodeTemplateText(p.text).length : contentIds[p.message]!.length;
    if ('message' in p) {
      const role = context.messages[p.message]!.role;
      if (role === 'user') layout.user.push({ start: pos, end: pos + n });
      if (role === 'tool') layout.toolResults.push({ messageIndex: p.message, start: pos, end: pos + n });
    }
    pos += n;
  }
  layout.actionStart = pos + prefix.length;

  const terms = callTerms(context.action);
  return {
    action: { prefix, ids: actionIds, text: tokenizer.decode(actionIds) },
    contextIds(keep, dropTools, edit) {
      const toolList = tools.filter((_, i) => !dropTools.has(context.tools[i]!.name));
      const edited = edit === undefined ? [] : 'content' in edit ? tokenizer.encodeText(edit.content) : dropCallSentenceIds(contentIds[edit.messageIndex]!, (id) => tokenizer.decodeToken(id), terms);
      return renderIds(keep, toolList, (i) => (edit?.messageIndex === i ? edited : contentIds[i]!));
    },
    layout,
    truncation,
    actionLayout: undefined,
  };
}
