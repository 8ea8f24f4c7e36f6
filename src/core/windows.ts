/**
 * Windowed attribution: a check that does not fit the proxy's window is scored in several
 * windows instead of having its tool definitions dropped or its results cut. Every window holds what
 * every call is judged against (the system prompt, the user's turns, the agent's own turns, the called
 * tool's description and the action) and a share of the rest: the other tools' descriptions and the
 * tool results. Each description and each result sits in exactly one window, where it is ablated and
 * attended to; its delta is judged against that window's own dU. A check that fits is one window: the
 * conductor never plans windows for it, so its passes and verdict are today's.
 *
 * The planner works from token counts the scorer measured (`ContextSizes`); it fills each window to
 * WINDOW_FILL of the budget, the rest absorbing chat-template wrappers the counts leave out. A result
 * longer than a window's free room gets a window of its own, where the window cut shortens it (reported).
 */
import type { StructuredContext, UntrustedSpan } from './context.js';
import { cutText } from './long-texts.js';
import { callTerms } from './sentence-cut.js';

/** What each part of a context costs in tokens, as the scorer encodes it (plain data). */
export interface ContextSizes {
  /** Tokens every sequence has whatever it keeps: the start token, the action and its prefix. */
  fixed: number;
  /** Per tool definition, in `context.tools` order. */
  tools: number[];
  /** Per message, in `context.messages` order. */
  messages: number[];
}

/** Share of the budget the planner fills. */
export const WINDOW_FILL = 0.9;

/** Below this much free room per window, windows cannot help (each would hold almost nothing): the check is scored in one, as before. */
export const MIN_WINDOW_ROOM_TOKENS = 64;

/** One window: the original indexes of the messages and tools it holds, ascending. */
export interface WindowPlan {
  messages: number[];
  tools: number[];
  /** Tool index -> the share of its description kept: a description longer than a window's room is cut to fit (head, tail and the sentences that name the call). */
  toolShares?: Record<number, number>;
}

/** A description cut to a share never keeps fewer tokens than this. */
const MIN_DESCRIPTION_TOKENS = 32;

/** A window's context and how its indexes map back to the check's. */
export interface CheckWindow {
  plan: WindowPlan;
  context: StructuredContext;
  /** Window message index -> the check's message index. */
  messageIndexes: number[];
  /** Window span id -> the check's span id. */
  spanIds: number[];
}

/** UTF-8 bytes of a string: an upper bound on a byte-level BPE's tokens for it. */
export function utf8Bytes(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    bytes += c < 0x80 ? 1 : c < 0x800 ? 2 : c >= 0xd800 && c <= 0xdbff ? 2 : c >= 0xdc00 && c <= 0xdfff ? 2 : 3;
  }
  return bytes;
}

/** Tokens a message or tool definition may add beyond its text's bytes (role and format markers). */
const PART_OVERHEAD_TOKENS = 16;

/**
 * Whether the context surely fits `budget` tokens in EdgeArmor's chat format (each token covers at least
 * one byte of text), so the conductor need not ask the scorer to measure it. False means "maybe not".
 */
export function surelyFits(context: Pick<StructuredContext, 'messages' | 'tools' | 'action'>, budget: number): boolean {
  let bound = PART_OVERHEAD_TOKENS + utf8Bytes(context.action.name) + utf8Bytes(JSON.stringify(context.action.arguments));
  for (const m of context.messages) {
    bound += PART_OVERHEAD_TOKENS + utf8Bytes(m.content) + (m.tool_calls ? utf8Bytes(JSON.stringify(m.tool_calls)) : 0) + utf8Bytes(m.tool_name ?? '');
    if (bound > budget) return false;
  }
  for (const t of context.tools) {
    bound += PART_OVERHEAD_TOKENS + utf8Bytes(t.name) + utf8Bytes(t.description) + utf8Bytes(JSON.stringify(t.parameters ?? {}));
    if (bound > budget) return false;
  }
  return bound <= budget;
}

/**
 * The windows of a check that does not fit `budget` tokens, or null when one window is the answer: the
 * whole check fits, or the parts every window holds leave less than MIN_WINDOW_ROOM_TOKENS (the window
 * cut then shortens it, as without windows). Tool results and other tools' descriptions are packed
 * largest first into the first window with room (first-fit decreasing), so the windows are few.
 */
export function planWindows(context: Pick<StructuredContext, 'messages' | 'tools' | 'action'>, sizes: ContextSizes, budget: number): WindowPlan[] | null {
  const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
  if (sizes.fixed + sum(sizes.tools) + sum(sizes.messages) <= budget) return null;
  const fill = Math.floor(budget * WINDOW_FILL);
  const shared = context.messages.flatMap((m, i) => (m.role === 'tool' ? [] : [i]));
  const calledTool = context.tools.findIndex((t) => t.name === context.action.name);
  const sharedTokens = sizes.fixed + sum(shared.map((i) => sizes.messages[i]!));
  // The called tool's description is in every window: cut to a share when it would leave too little room.
  const shares: Record<number, number> = {};
  let called = calledTool >= 0 ? sizes.tools[calledTool]! : 0;
  if (calledTool >= 0 && sharedTokens + called > fill - MIN_WINDOW_ROOM_TOKENS) {
    const target = fill - MIN_WINDOW_ROOM_TOKENS - sharedTokens;
    if (target < MIN_DESCRIPTION_TOKENS) return null;
    shares[calledTool] = target / called;
    called = target;
  }
  const room = fill - sharedTokens - called;
  if (room < MIN_WINDOW_ROOM_TOKENS) return null;
  type Item = { kind: 'message' | 'tool'; index: number; size: number };
  const items: Item[] = [
    ...context.messages.flatMap((m, i): Item[] => (m.role === 'tool' ? [{ kind: 'message', index: i, size: sizes.messages[i]! }] : [])),
    ...context.tools.flatMap((_, i): Item[] => (i === calledTool ? [] : [{ kind: 'tool', index: i, size: sizes.tools[i]! }])),
  ].sort((a, b) => b.size - a.size || (a.kind === b.kind ? a.index - b.index : a.kind === 'message' ? -1 : 1));
  const windows: Array<{ free: number; messages: number[]; tools: number[]; shares: Record<number, number> }> = [];
  for (const item of items) {
    let w = windows.find((x) => x.free >= item.size);
    if (w === undefined) windows.push((w = { free: room, messages: [], tools: [], shares: {} }));
    // A description longer than the room is cut to fit it (a long result is cut by the window cut, reported).
    if (item.kind === 'tool' && item.size > room) w.shares[item.index] = room / item.size;
    w.free -= Math.min(item.size, room);
    (item.kind === 'message' ? w.messages : w.tools).push(item.index);
  }
  const anyShare = Object.keys(shares).length > 0 || windows.some((w) => Object.keys(w.shares).length > 0);
  if (windows.length === 0 || (windows.length === 1 && !anyShare)) return null;
  const ascending = (xs: number[]) => [...xs].sort((a, b) => a - b);
  return windows.map((w) => {
    const toolShares = { ...shares, ...w.shares };
    return {
      messages: ascending([...shared, ...w.messages]),
      tools: ascending(calledTool >= 0 ? [calledTool, ...w.tools] : w.tools),
      ...(Object.keys(toolShares).length > 0 ? { toolShares } : {}),
    };
  });
}

/** The context of one window: its messages and tools, with the spans and masked indexes renumbered. */
export function windowContext(context: StructuredContext, plan: WindowPlan): CheckWindow {
  const terms = plan.toolShares ? callTerms(context.action) : [];
  const position = new Map(plan.messages.map((orig, i) => [orig, i]));
  const mapIndexes = (xs: readonly number[]) => xs.flatMap((i) => (position.has(i) ? [position.get(i)!] : []));
  const kept = context.spans.filter((s) => position.has(s.messageIndex));
  const spans: UntrustedSpan[] = kept.map((s, id) => ({ id, messageIndex: position.get(s.messageIndex)!, toolName: s.toolName }));
  return {
    plan,
    context: {
      ...context,
      messages: plan.messages.map((i) => context.messages[i]!),
      userIndices: mapIndexes(context.userIndices),
      spans,
      maskedIndices: mapIndexes(context.maskedIndices),
      maskedArgumentIndices: mapIndexes(context.maskedArgumentIndices),
      tools: plan.tools.map((i) => {
        const tool = context.tools[i]!;
        const share = plan.toolShares?.[i];
        if (share === undefined) return tool;
        const limit = Math.floor(tool.description.length * share * WINDOW_FILL);
        return { ...tool, description: cutText(tool.description, limit, terms).text };
      }),
    },
    messageIndexes: plan.messages,
    spanIds: kept.map((s) => s.id),
  };
}
