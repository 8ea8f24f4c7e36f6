import { InvalidInputError, InvalidOptionsError } from './errors.js';
import { normalizeTools } from './tools.js';
import { requireSpanLimit, requireUserRequest } from './guard-input.js';
import type { ResolvedGuardOptions } from './options.js';
import type { GuardInput, Message, ToolCall, ToolSpec } from './types.js';

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
  const masked =
    options.maskCotForScoring && first !== undefined
      ? maskAssistantTextAfter(input.messages, first.messageIndex, options.cotRedactionText)
      : { messages: input.messages.map((m) => ({ ...m })), maskedIndices: [] as number[] };
  return {
    messages: masked.messages,
    userIndices,
    spans,
    maskedIndices: masked.maskedIndices,
    action: input.action,
    tools: input.tools === undefined ? [] : normalizeTools(input.tools, 'input.tools'),
    privileged: isPrivilegedTool(input.action.name, options),
    trustSource: policy.source,
  };
}
