/**
 * A guard call encoded with a chat template (the model's own, a shipped family rendering from
 * family-templates.ts, or the caller's), for models that do not speak EdgeArmor's chat format.
 *
 * Every message's text enters the template as a sentinel; the rendered text between sentinels is
 * the template's own and is encoded with its control tokens, while each message's text is encoded
 * as plain text (never a control token) and put in the sentinel's place. Strings the template
 * prints itself (tool names, descriptions, schemas, call arguments) are rendered as given, after
 * any control-token literal in them is broken with a word joiner (U+2060), and the call is checked:
 * the rendered text must contain exactly the control tokens of the same render with those strings
 * blanked. Variants are whole re-renders without the ablated messages or tool descriptions.
 *
 * The proposed call is rendered as the conversation's last assistant turn, and the scored action is
 * what varies with the call: the tokens shared with the renders of two other calls (the template's call
 * marker, an empty think block, the end of the turn) are context, not action. Before anything is scored,
 * every message's text and every tool definition must be in the render (`render check`): a template that
 * drops a tool result or a description would hide an injection from the proxy.
 */
import { InferenceError } from '../core/errors.js';
import type { StructuredContext } from '../core/context.js';
import type { ActionTextMode } from '../core/options.js';
import type { ActionTokenPart } from '../core/attribution.js';
import { argumentValueList } from '../core/tool-poisoning.js';
import type { Message, MessageToolCall, ToolSpec } from '../core/types.js';
import { callJson, formatJson } from './chat-format.js';
import { dropCallSentenceIds, truncateToFit, type ActionLayout, type ContextLayout, type EncodedCall } from './call-encoding.js';
import { callTerms } from '../core/sentence-cut.js';
import { messageRef } from '../core/message-ref.js';
import type { ProxyTokenizer, TemplateMessage } from './tokenizer.js';

const WORD_JOINER = '\u2060';

/** Two calls unlike any real one in their first and last characters: what the three renders share is scaffolding. */
const OTHER_CALLS: readonly MessageToolCall[] = [
  { name: 'qz9', arguments: { q: 7 } },
  { name: 'vk8', arguments: { v: 'w' } },
];

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

/** The ways a string the template prints itself may appear in the render: as given, or inside a JSON string (tojson). */
function renderedForms(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1);
  const ascii = json.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return [...new Set([s, json, ascii])];
}

const appearsIn = (text: string, s: string) => s === '' || renderedForms(s).some((f) => text.includes(f));

/** Length of the common prefix of two id lists. */
function commonPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}

/** Length of the common suffix of two id lists. */
function commonSuffix(a: readonly number[], b: readonly number[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[a.length - 1 - n] === b[b.length - 1 - n]) n++;
  return n;
}

/** Character offsets of each token of a text decoded token by token. */
function tokenOffsets(pieces: readonly string[]): number[] {
  const starts: number[] = [];
  let at = 0;
  for (const p of pieces) {
    starts.push(at);
    at += p.length;
  }
  starts.push(at);
  return starts;
}

/** Token rows overlapping the half-open character range [from, to). */
function rowsOf(starts: readonly number[], from: number, to: number): { start: number; end: number } | null {
  let start = -1;
  let end = -1;
  for (let k = 0; k + 1 < starts.length; k++) {
    if (starts[k]! < to && starts[k + 1]! > from) {
      if (start < 0) start = k;
      end = k + 1;
    }
  }
  return start < 0 ? null : { start, end };
}

/**
 * Labels the tokens of a template-rendered action (name vs arguments) and finds the rows of its argument values,
 * from the text the tokens decode to: the template writes the values as JSON, in the call's order.
 */
export function templateActionLayout(pieces: readonly string[], name: string, args: unknown): ActionLayout {
  const text = pieces.join('');
  const starts = tokenOffsets(pieces);
  const nameAt = text.indexOf(name);
  const nameEnd = nameAt < 0 ? 0 : nameAt + name.length;
  const parts: ActionTokenPart[] = pieces.map((_, k) => (starts[k]! < nameEnd ? 'name' : 'arguments'));
  const valueRows: ActionLayout['valueRows'] = [];
  let from = nameEnd;
  argumentValueList(args).forEach((v, value) => {
    const forms = [formatJson(v), ...(typeof v === 'string' ? renderedForms(v) : [])];
    const hit = forms.map((f) => ({ f, at: text.indexOf(f, from) })).find((h) => h.at >= 0);
    if (!hit) return;
    const rows = rowsOf(starts, hit.at, hit.at + hit.f.length);
    if (rows) valueRows.push({ ...rows, value });
    from = hit.at + hit.f.length;
  });
  return { parts, valueRows };
}

type Part = { text: string } | { message: number };

/** The renderer of one guard call: renders, encodes and checks variants; the encoder truncates and then asks it for the call. */
function templateRenderer(tokenizer: ProxyTokenizer, context: StructuredContext, actionText: ActionTextMode, rendering: string) {
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
  const callMessage = (call: MessageToolCall): TemplateMessage => ({ role: 'assistant', content: '', tool_calls: toolCalls([call]) });

  const render = (messages: TemplateMessage[], tools: unknown[], generationPrompt: boolean): string => {
    try {
      return tokenizer.renderChatTemplate(messages, tools.length > 0 ? tools : undefined, generationPrompt);
    } catch (e) {
      throw new InferenceError(`the proxy's chat template (rendering "${rendering}") could not render this conversation: ${(e as Error).message}`, { stage: 'chat-template', rendering });
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
  const state = { tools: templateTools(context.tools) };
  const contentIds = context.messages.map((m) => (m.content === '' ? [] : tokenizer.encodeText(m.content)));
  const assemble = (parts: Part[], contents: (i: number) => number[]): number[] => parts.flatMap((p) => ('text' in p ? encodeTemplateText(p.text) : contents(p.message)));
  const template = actionText === 'template';
  /** The render of a variant: its messages, then the proposed call as the last turn (template action text) or the generation prompt (raw). */
  const renderVariant = (keep: readonly number[], toolList: unknown[], call: MessageToolCall = context.action): string => {
    const messages = keep.map((i) => allMessages[i]!);
    return template ? render([...messages, callMessage(call)], toolList, false) : render(messages, toolList, true);
  };
  const all = context.messages.map((_, i) => i);

  // The action, from the full render with each content as encoded now: its tokens come from the template text after the last message's.
  let actionIds: number[];
  let suffix: number[] = [];
  if (template) {
    const ids = (call: MessageToolCall) => assemble(split(renderVariant(all, state.tools, call)), (i) => contentIds[i]!);
    const real = ids(context.action);
    const others = OTHER_CALLS.map(ids);
    const start = Math.min(...others.map((o) => commonPrefix(real, o)));
    const tail = Math.min(real.length - start, ...others.map((o) => commonSuffix(real, o)));
    actionIds = real.slice(start, real.length - tail);
    suffix = real.slice(real.length - tail);
    const contextEnd = assemble(split(renderVariant(all, state.tools)).filter((p, k, ps) => 'message' in p || ps.slice(k).some((q) => 'message' in q)), (i) => contentIds[i]!).length;
    if (start < contextEnd) {
      throw new InferenceError(`the chat template (rendering "${rendering}") writes the proposed call before the conversation's last message, so the call cannot be scored as what follows the context`, {
        stage: 'chat-template',
        rendering,
      });
    }
    if (actionIds.some((id) => tokenizer.isControlId(id))) {
      throw new InferenceError(`the tool call rendered with control tokens inside it (rendering "${rendering}"): refusing to score it`, { stage: 'chat-template', rendering });
    }
  } else {
    actionIds = tokenizer.encodeText(context.action.raw_text ?? callJson(context.action.name, context.action.arguments));
  }

  /** The context ids of a variant: its render up to the action (in template mode the render must end with the full variant's action and suffix). */
  const variantIds = (keep: readonly number[], toolList: unknown[], contents: (i: number) => number[]): number[] => {
    const ids = assemble(split(renderVariant(keep, toolList)), contents);
    if (!template) return ids;
    const end = ids.length - suffix.length - actionIds.length;
    if (end < 0 || commonSuffix(ids, [...actionIds, ...suffix]) < actionIds.length + suffix.length) {
      throw new InferenceError(`the chat template (rendering "${rendering}") renders the proposed call differently when parts of the context are left out, so the variants cannot be compared`, {
        stage: 'chat-template',
        rendering,
      });
    }
    return ids.slice(0, end);
  };

  return {
    contentIds,
    actionIds,
    /** Tokens of the full variant and its action. */
    total: () => variantIds(all, state.tools, (i) => contentIds[i]!).length + actionIds.length,
    dropTools(): boolean {
      if (state.tools.length === 0) return false;
      state.tools = [];
      return true;
    },
    /** Refuses a call whose tool list or earlier calls carry control tokens the template does not write itself. */
    checkControls(): void {
      const blank = template ? [...allMessages.map(blankMessage), blankMessage(callMessage(context.action))] : allMessages.map(blankMessage);
      const real = template ? [...allMessages, callMessage(context.action)] : allMessages;
      if (controlCount(render(real, state.tools, !template)) !== controlCount(render(blank, blankStrings(state.tools), !template))) {
        throw new InferenceError('the tool list or a tool call rendered with more control tokens than the template writes: refusing to score it', { stage: 'chat-template', rendering });
      }
    },
    /**
     * The render check: every message's text, every earlier call's name, every tool definition (name and
     * description, unless truncation dropped the list) and the proposed call's name must be in the full
     * variant's render; otherwise the check is refused, naming what is missing.
     */
    checkRendered(toolsDropped: boolean): void {
      const text = renderVariant(all, state.tools);
      const present = new Set(split(text).flatMap((p) => ('message' in p ? [p.message] : [])));
      const templateText = text.replace(sentinelPattern, '\n');
      const missing: string[] = [];
      context.messages.forEach((m, i) => {
        if (m.content !== '' && !present.has(i)) missing.push(`${messageRef(i)} (${m.role})`);
        for (const c of m.tool_calls ?? []) if (!appearsIn(templateText, neutralizeControls(c.name, controls))) missing.push(`the call to "${c.name}" in ${messageRef(i)}`);
      });
      if (!toolsDropped) {
        for (const t of context.tools) {
          if (!appearsIn(templateText, neutralizeControls(t.name, controls))) missing.push(`tool "${t.name}"`);
          else if (!appearsIn(templateText, neutralizeControls(t.description, controls))) missing.push(`the description of tool "${t.name}"`);
        }
      }
      if (template && !appearsIn(tokenizer.decode(actionIds), neutralizeControls(context.action.name, controls))) missing.push(`the proposed call's name "${context.action.name}"`);
      if (missing.length === 0 && actionIds.length === 0) missing.push('the proposed call (no scorable tokens)');
      if (missing.length > 0) {
        throw new InferenceError(
          `the chat template (rendering "${rendering}") left out of what the proxy would read: ${missing.join(', ')}; the guard does not score a conversation whose parts the proxy cannot see (give a template that writes them: the chatTemplate option)`,
          { stage: 'chat-template', rendering, missing },
        );
      }
    },
    variantIds,
    /** The tool list as rendered now, without the named tools. */
    toolsWithout: (drop: ReadonlySet<string>) => state.tools.filter((_, i) => !drop.has(context.tools[i]!.name)),
    /** Where user turns, tool results, tool definitions and the action sit in the full variant. */
    layout(): ContextLayout {
      const layout: ContextLayout = { user: [], tools: [], toolResults: [], actionStart: 0 };
      let pos = 0;
      let toolFrom = 0;
      const toolNames = state.tools.length > 0 ? context.tools : [];
      for (const p of split(renderVariant(all, state.tools))) {
        if ('message' in p) {
          const n = contentIds[p.message]!.length;
          const role = context.messages[p.message]!.role;
          if (role === 'user') layout.user.push({ start: pos, end: pos + n });
          if (role === 'tool') layout.toolResults.push({ messageIndex: p.message, start: pos, end: pos + n });
          pos += n;
          continue;
        }
        const ids = encodeTemplateText(p.text);
        // Tool definitions are template text: each from its name to the end of its description, in the list's order.
        const starts = tokenOffsets(ids.map((id) => tokenizer.decodeToken(id)));
        const decoded = ids.map((id) => tokenizer.decodeToken(id)).join('');
        let from = 0;
        while (toolFrom < toolNames.length) {
          const t = toolNames[toolFrom]!;
          const nameAt = renderedForms(neutralizeControls(t.name, controls)).map((f) => decoded.indexOf(f, from)).filter((k) => k >= 0);
          if (nameAt.length === 0) break;
          const at = Math.min(...nameAt);
          const desc = renderedForms(neutralizeControls(t.description, controls)).map((f) => ({ f, k: decoded.indexOf(f, at) })).filter((h) => h.k >= 0);
          const end = desc.length > 0 ? Math.min(...desc.map((h) => h.k + h.f.length)) : at + t.name.length;
          const rows = rowsOf(starts, at, end);
          if (rows) layout.tools.push({ tool: t.name, start: pos + rows.start, end: pos + rows.end });
          from = end;
          toolFrom++;
        }
        pos += ids.length;
      }
      layout.actionStart = pos - suffix.length - actionIds.length;
      if (!template) layout.actionStart = pos;
      return layout;
    },
  };
}

/** Encodes a guard call with the tokenizer's chat template; `rendering` names it in errors. */
export async function encodeTemplateCall(tokenizer: ProxyTokenizer, context: StructuredContext, actionText: ActionTextMode, budget: number, rendering = 'model-template'): Promise<EncodedCall> {
  const r = templateRenderer(tokenizer, context, actionText, rendering);
  r.checkControls();
  const truncation = await truncateToFit(context, r.contentIds, budget, r.total, r.dropTools, (ids) => ids.map((id) => tokenizer.decodeToken(id)));
  r.checkRendered(truncation.droppedToolDefinitions);
  const terms = callTerms(context.action);
  const { contentIds, actionIds } = r;
  return {
    action: { prefix: [], ids: actionIds, text: tokenizer.decode(actionIds) },
    contextIds(keep, dropTools, edit) {
      const edited = edit === undefined ? [] : 'content' in edit ? tokenizer.encodeText(edit.content) : dropCallSentenceIds(contentIds[edit.messageIndex]!, (id) => tokenizer.decodeToken(id), terms);
      return r.variantIds(keep, r.toolsWithout(dropTools), (i) => (edit?.messageIndex === i ? edited : contentIds[i]!));
    },
    layout: r.layout(),
    truncation,
    actionLayout: actionText === 'template' ? templateActionLayout(actionIds.map((id) => tokenizer.decodeToken(id)), context.action.name, context.action.arguments) : undefined,
  };
}

/**
 * Renders a probe conversation and applies every check a guard call gets: throws the first problem, so a
 * template that cannot write tool definitions, parallel calls, tool results or a call after an
 * assistant's text is found at load, not at the first check.
 */
export function probeTemplate(tokenizer: ProxyTokenizer, probe: StructuredContext, rendering: string): void {
  const r = templateRenderer(tokenizer, probe, 'template', rendering);
  r.checkControls();
  r.checkRendered(false);
  const all = probe.messages.map((_, i) => i);
  r.variantIds(all.slice(1), r.toolsWithout(new Set()), (i) => r.contentIds[i]!);
}
