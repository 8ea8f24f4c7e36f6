import { InvalidInputError, InvalidOptionsError } from './errors.js';
import { normalizeTools } from './tools.js';
import { requireSpanLimit, requireUserRequest } from './guard-input.js';
import type { ResolvedGuardOptions } from './options.js';
import type { GuardInput, JsonValue, Message, ToolCall, ToolSpec } from './types.js';

/** One untrusted span: a whole tool-result message. */
export interface UntrustedSpan {
  /** Position among the spans, 0-based; variant ids use it (`no-span:<id>`). */
  id: number;
  /** Index of the tool message in `messages`. */
  messageIndex: number;
  /** Name of the tool that produced it, or null when the message carries none. */
  toolName: string | null;
}

/** The conversation decomposed for attribution: U, history, untrusted spans, tools. */
export interface StructuredContext {
  /** Messages as they will be scored (after pre-scoring CoT masking when on); indexes match the input. */
  messages: Message[];
  /** Indexes of the user messages that form U and are ablated together. */
  userIndices: number[];
  /** Untrusted tool results, in conversation order. */
  spans: UntrustedSpan[];
  /** Indexes of assistant messages whose text was replaced by the redaction text before scoring. */
  maskedIndices: number[];
  /** Indexes of assistant messages whose tool-call arguments repeated a value from an untrusted result, replaced by LAUNDERED_VALUE_TEXT before scoring. */
  maskedArgumentIndices: number[];
  /** The proposed action. */
  action: ToolCall;
  /** Tools given to the agent, normalised. */
  tools: ToolSpec[];
  /** Whether the action's tool is checked at all. */
  privileged: boolean;
  /** Where the trust policy came from: the options, the input case, or the default (all untrusted). */
  trustSource: 'options' | 'input' | 'default';
}

/** Decides whether a tool result is untrusted under the resolved policy; unnamed results are always untrusted. */
export function isUntrustedTool(toolName: string | null, policy: { untrustedTools: readonly string[] | null; trustedTools: readonly string[] | null }): boolean {
  // A result without a tool name cannot be matched against any list, so it is treated as untrusted (fail safe).
  if (toolName === null) return true;
  if (policy.untrustedTools !== null) return policy.untrustedTools.includes(toolName);
  if (policy.trustedTools !== null) return !policy.trustedTools.includes(toolName);
  return true;
}

/** Whether calls to this tool are checked at all: every tool when `privilegedTools` is null. */
export function isPrivilegedTool(toolName: string, options: Pick<ResolvedGuardOptions, 'privilegedTools'>): boolean {
  return options.privilegedTools === null || options.privilegedTools.includes(toolName);
}

/** Replaces the free text of every assistant message after `afterIndex` with `redactionText`, keeping tool calls; returns the new messages and the masked indexes. */
export function maskAssistantTextAfter(messages: readonly Message[], afterIndex: number, redactionText: string): { messages: Message[]; maskedIndices: number[] } {
  const maskedIndices: number[] = [];
  const out = messages.map((m, i) => {
    // Empty text has no reasoning to hide; inserting the redaction text there would add context that was never present.
    if (i <= afterIndex || m.role !== 'assistant' || m.content.trim() === '') return { ...m };
    maskedIndices.push(i);
    return { ...m, content: redactionText };
  });
  return { messages: out, maskedIndices };
}

/** What replaces, before scoring, an argument value the agent copied from an untrusted result into one of its own later calls. */
export const LAUNDERED_VALUE_TEXT = '[value from a tool result]';

/** Argument values shorter than this (ids like "1", words like "yes") are too common to trace to a result. */
export const MIN_TRACED_VALUE_CHARS = 4;

/** Texts, lowercased and joined when first read: each text once, however often they are read. */
function lazyLowerText(): { add(text: string): void; text(): string } {
  const parts: string[] = [];
  let lowered = '';
  let count = 0;
  return {
    add: (text) => void parts.push(text),
    text() {
      for (; count < parts.length; count++) lowered += `\n${parts[count]!.toLowerCase()}`;
      return lowered;
    },
  };
}

/**
 * Masks laundering through the agent's own calls. The arguments of a call the agent makes after it read
 * untrusted text are agent output, like its reasoning: a value there whose first appearance was in an
 * untrusted result (not in the user's or system's words, nor in a trusted result, before that call) is
 * replaced by LAUNDERED_VALUE_TEXT, so it keeps its untrusted origin however often the agent repeats it
 * and removing the result that planted it still removes it from the context. The calls' own results
 * stay untrusted spans of their own.
 */
export function maskLaunderedArguments(messages: readonly Message[], untrusted: ReadonlySet<number>): { messages: Message[]; maskedIndices: number[] } {
  // Lowercased only when a value long enough to trace is looked up: most calls carry none, and lowercasing
  // every result up front costs a long check tens of milliseconds on its host's thread.
  const trustedSeen = lazyLowerText();
  const untrustedSeen = lazyLowerText();
  let afterUntrusted = false;
  const maskedIndices: number[] = [];
  const out = messages.map((m, i) => {
    if (m.role === 'assistant' && afterUntrusted && m.tool_calls !== undefined) {
      let changed = false;
      const laundered = (value: string): boolean => {
        const needle = value.trim().toLowerCase();
        return needle.length >= MIN_TRACED_VALUE_CHARS && untrustedSeen.text().includes(needle) && !trustedSeen.text().includes(needle);
      };
      const mask = (value: JsonValue): JsonValue => {
        if ((typeof value === 'string' || typeof value === 'number') && laundered(String(value))) {
          changed = true;
          return LAUNDERED_VALUE_TEXT;
        }
        if (Array.isArray(value)) return value.map(mask);
        if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, mask(v)]));
        return value;
      };
      const calls = m.tool_calls.map((c) => ({ ...c, arguments: mask(c.arguments) }));
      if (changed) {
        maskedIndices.push(i);
        return { ...m, tool_calls: calls };
      }
      return { ...m };
    }
    if (untrusted.has(i)) {
      untrustedSeen.add(m.content);
      afterUntrusted = true;
    } else if (m.role !== 'assistant' || !afterUntrusted) trustedSeen.add(m.content);
    return { ...m };
  });
  return { messages: out, maskedIndices };
}

function trustPolicy(input: GuardInput, options: ResolvedGuardOptions): { untrustedTools: string[] | null; trustedTools: string[] | null; source: StructuredContext['trustSource'] } {
  if (options.untrustedTools !== null || options.trustedTools !== null) {
    return { untrustedTools: options.untrustedTools, trustedTools: options.trustedTools, source: 'options' };
  }
  const u = input.untrusted_tools;
  const t = input.trusted_tools;
  if (u !== undefined && t !== undefined) {
    throw new InvalidInputError('input: received both untrusted_tools and trusted_tools; give at most one.', { fields: ['untrusted_tools', 'trusted_tools'] });
  }
  if (u !== undefined) return { untrustedTools: u, trustedTools: null, source: 'input' };
  if (t !== undefined) return { untrustedTools: null, trustedTools: t, source: 'input' };
  return { untrustedTools: null, trustedTools: null, source: 'default' };
}

/** Builds the structured context of a guard case under resolved options (validated input expected; see parseGuardInput). */
export function buildContext(input: GuardInput, options: ResolvedGuardOptions): StructuredContext {
  if (options.untrustedTools !== null && options.trustedTools !== null) {
    throw new InvalidOptionsError('Invalid options: received both untrustedTools and trustedTools; give at most one.', { option: 'untrustedTools' });
  }
  requireUserRequest(input.messages);
  const userAll = input.messages.flatMap((m, i) => (m.role === 'user' ? [i] : []));
  const userIndices = options.userRequest === 'last' ? userAll.slice(-1) : userAll;
  const policy = trustPolicy(input, options);
  const spans: UntrustedSpan[] = [];
  input.messages.forEach((m, i) => {
    if (m.role !== 'tool') return;
    const toolName = m.tool_name ?? null;
    if (isUntrustedTool(toolName, policy)) spans.push({ id: spans.length, messageIndex: i, toolName });
  });
  requireSpanLimit(spans.length, 'untrusted spans');
  const first = spans[0];
  const mask = options.maskCotForScoring && first !== undefined;
  const laundered = mask ? maskLaunderedArguments(input.messages, new Set(spans.map((s) => s.messageIndex))) : null;
  const masked = laundered
    ? maskAssistantTextAfter(laundered.messages, first!.messageIndex, options.cotRedactionText)
    : { messages: input.messages.map((m) => ({ ...m })), maskedIndices: [] as number[] };
  return {
    messages: masked.messages,
    userIndices,
    spans,
    maskedIndices: masked.maskedIndices,
    maskedArgumentIndices: laundered?.maskedIndices ?? [],
    action: input.action,
    tools: input.tools === undefined ? [] : normalizeTools(input.tools, 'input.tools'),
    privileged: isPrivilegedTool(input.action.name, options),
    trustSource: policy.source,
  };
}
