/**
 * The character cut before tokenizing (it bounds the tokenizer's time and the event loop's stalls): a non-user message longer than
 * the model's window could hold whatever its tokens is cut in its middle to as much text as the window
 * could ever keep of it (the sentences of the middle that name the call, core/sentence-cut.ts, then
 * head and tail), and the cut is reported per message. A user message that long can never fit (user
 * turns are never cut): ContextTooLongError at once.
 *
 * The conductor cuts as soon as the scorer says how much text can fit, before it plans variants or
 * sends anything to the scorer, so nothing downstream (duplicate grouping, the copy to a child process
 * or worker, the judge) ever handles more than the window's worth of a text; it yields to the event
 * loop between long messages, so a host's loop is never blocked for more than one message's cut.
 */
import type { StructuredContext } from './context.js';
import { ContextTooLongError } from './errors.js';
import { messageRef } from './message-ref.js';
import { callSnippets, callTerms } from './sentence-cut.js';

/** A context with its long texts cut, and what was cut. */
export interface CutContext {
  /** The context to score: the same object when nothing was cut. */
  context: StructuredContext;
  /** Message index -> UTF-16 code units cut from its middle (empty when nothing was cut). */
  cutChars: Record<number, number>;
}

/**
 * UTF-16 code units beyond which no text fits `budgetTokens` tokens. A token stands for at most
 * `longestTokenChars` vocabulary characters: bytes for byte-level BPE (a code unit is at least one
 * byte), code points for SentencePiece (a code point is at most two code units), hence the factor 2.
 */
export function maxFittingChars(budgetTokens: number, longestTokenChars: number): number {
  return 2 * budgetTokens * longestTokenChars;
}

/**
 * Lets the host's event loop run (timers, I/O, other calls) before the work that follows: a macrotask,
 * setImmediate where the host has it (Node: no 1 ms timer clamp), else a 0 ms timer.
 */
export function yieldToEventLoop(): Promise<void> {
  const immediate = (globalThis as { setImmediate?: (callback: () => void) => unknown }).setImmediate;
  return new Promise((resolve) => (immediate ? immediate(() => resolve()) : setTimeout(resolve, 0)));
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** One text cut to `limit` code units: the sentences of its middle that name the call (up to half the limit), the rest head and tail. */
export function cutText(text: string, limit: number, terms: readonly string[]): { text: string; cut: number } {
  const middle = text.slice(Math.ceil(limit / 2), text.length - Math.floor(limit / 2));
  const kept = callSnippets(middle, terms, Math.floor(limit / 2)).join('\n');
  // The line breaks around the kept sentences count too: a text longer than `limit` would be cut again
  // (the engine repeats this cut), and that second cut falls in its middle, on the kept sentences.
  const rest = limit - kept.length - (kept === '' ? 0 : 2);
  let head = Math.ceil(rest / 2);
  let tail = text.length - Math.floor(rest / 2);
  if (isHighSurrogate(text.charCodeAt(head - 1))) head -= 1;
  if (isHighSurrogate(text.charCodeAt(tail - 1))) tail += 1;
  const cut = tail - head - kept.length;
  return { text: kept === '' ? text.slice(0, head) + text.slice(tail) : `${text.slice(0, head)}\n${kept}\n${text.slice(tail)}`, cut };
}

/**
 * Cuts every message of `context` longer than `maxChars` (see the module comment); `budgetTokens` is
 * the window, for the error. Yields before each cut and stops on the signal.
 */
export async function cutLongTexts(context: StructuredContext, maxChars: number, budgetTokens: number, signal?: AbortSignal): Promise<CutContext> {
  const cutChars: Record<number, number> = {};
  if (context.messages.every((m) => m.content.length <= maxChars)) return { context, cutChars };
  const terms = callTerms(context.action);
  const messages: StructuredContext['messages'] = [];
  for (const [i, m] of context.messages.entries()) {
    if (m.content.length <= maxChars) {
      messages.push(m);
      continue;
    }
    if (m.role === 'user') {
      throw new ContextTooLongError(`${messageRef(i)} (a user turn, never cut) has ${m.content.length} characters, more than any text that fits the model's ${budgetTokens} tokens`, {
        messageIndex: i,
        chars: m.content.length,
        maxContextTokens: budgetTokens,
      });
    }
    await yieldToEventLoop();
    signal?.throwIfAborted();
    const { text, cut } = cutText(m.content, maxChars, terms);
    cutChars[i] = cut;
    messages.push({ ...m, content: text });
  }
  return { context: { ...context, messages }, cutChars };
}
