/**
 * Bounds the tokenizer's work on a guard call by the model's window instead of the input's size, and
 * keeps it interruptible (seven tool results of 999,000 CJK characters blocked the event
 * loop for 42 s under `timeoutMs: 2000`):
 *
 * 1. A non-user message too long for the window whatever its tokens is cut in its middle before
 *    tokenizing (core/long-texts.ts; the conductor has normally done it already, before planning).
 * 2. Long texts (message contents, history calls, tool definitions) are tokenized in chunks that
 *    yield to the event loop and stop on the signal; a tool definition only until it is known not to fit.
 */
import type { StructuredContext } from '../core/context.js';
import { cutLongTexts, maxFittingChars, yieldToEventLoop } from '../core/long-texts.js';
import { callJson, toolDefText } from './chat-format.js';
import type { ProxyTokenizer } from './tokenizer.js';

/** Texts longer than this are tokenized in chunks; shorter ones in one call, exactly as before. */
export const CHUNKED_TOKENIZE_MIN_CHARS = 16_384;

/** UTF-16 code units per tokenizer call when chunking: about 20 ms of CJK on the embedded model's tokenizer (4,096 blocked a host 40 ms and more). */
export const TOKENIZE_CHUNK_CHARS = 2_048;

/** A chunk boundary is moved back to a whitespace at most this far, so most pre-tokens stay whole. */
const WHITESPACE_SEARCH_CHARS = 256;

/** The call with its long texts bounded and pre-tokenized. */
export interface BoundedCall {
  context: StructuredContext;
  /** The tokenizer to encode `context` with: the original, answering pre-tokenized texts from its cache. */
  tokenizer: ProxyTokenizer;
  /** Message index -> UTF-16 code units cut from its middle before tokenizing (empty when nothing was cut). */
  cutChars: Record<number, number>;
}

const longestTokenCache = new WeakMap<object, number>();

/** The most text one token of this tokenizer stands for, in vocabulary characters (bytes for byte-level BPE). */
export function longestTokenChars(tokenizer: Pick<ProxyTokenizer, 'tokenByteLength' | 'vocabSize'>): number {
  const cached = longestTokenCache.get(tokenizer);
  if (cached !== undefined) return cached;
  let longest = 1;
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    try {
      longest = Math.max(longest, tokenizer.tokenByteLength(id));
    } catch {
      // Gaps in the id range hold no token.
    }
  }
  longestTokenCache.set(tokenizer, longest);
  return longest;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Where the next chunk after `start` ends: at a whitespace near the size limit when there is one, never inside a surrogate pair. */
function chunkEnd(text: string, start: number): number {
  let end = Math.min(text.length, start + TOKENIZE_CHUNK_CHARS);
  if (end === text.length) return end;
  for (let i = end; i > end - WHITESPACE_SEARCH_CHARS && i > start + 1; i--) {
    // Split before a whitespace that follows a non-whitespace: byte-level pre-tokenizers start a new piece there.
    if (/\s/.test(text[i]!) && !/\s/.test(text[i - 1]!)) return i;
  }
  if (isHighSurrogate(text.charCodeAt(end - 1))) end -= 1;
  return end;
}

function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw signal.reason instanceof Error ? signal.reason : new DOMException('The check was stopped.', 'AbortError');
}

/**
 * Token ids of a long text, a chunk at a time, yielding between chunks and stopping on the signal;
 * with `maxIds`, only until there are more than that many (enough to know the text cannot fit).
 */
export async function encodeTextChunked(tokenizer: Pick<ProxyTokenizer, 'encodeText'>, text: string, signal?: AbortSignal, maxIds = Infinity): Promise<number[]> {
  const ids: number[] = [];
  for (let start = 0; start < text.length && ids.length <= maxIds; ) {
    throwIfAborted(signal);
    const end = chunkEnd(text, start);
    for (const id of tokenizer.encodeText(text.slice(start, end))) ids.push(id);
    start = end;
    await yieldToEventLoop();
  }
  throwIfAborted(signal);
  return ids;
}

/** Cuts and pre-tokenizes the long message texts of a call (see the module comment). */
export async function boundLongTexts(tokenizer: ProxyTokenizer, context: StructuredContext, budgetTokens: number, signal?: AbortSignal): Promise<BoundedCall> {
  // Normally the conductor has cut already (the same cut, so nothing is left to cut here); direct engine callers get it here.
  const { context: cutContext, cutChars } = await cutLongTexts(context, maxFittingChars(budgetTokens, longestTokenChars(tokenizer)), budgetTokens, signal);
  const { messages } = cutContext;
  const cache = new Map<string, number[]>();
  const long = (text: string) => text.length >= CHUNKED_TOKENIZE_MIN_CHARS && !cache.has(text);
  for (const m of messages) {
    if (long(m.content)) cache.set(m.content, await encodeTextChunked(tokenizer, m.content, signal));
    // The calls of history messages (EdgeArmor's format encodes each as callJson text).
    for (const c of m.tool_calls ?? []) {
      const text = callJson(c.name, c.arguments);
      if (long(text)) cache.set(text, await encodeTextChunked(tokenizer, text, signal));
    }
  }
  for (const tool of context.tools) {
    const text = toolDefText(tool);
    // A definition with more ids than the window makes the truncation policy drop every definition,
    // so its ids past that are never used: tokenizing stops there (EdgeArmor's format; templates render tools themselves).
    if (long(text)) cache.set(text, await encodeTextChunked(tokenizer, text, signal, budgetTokens));
  }
  throwIfAborted(signal);
  if (cache.size === 0 && Object.keys(cutChars).length === 0) return { context, tokenizer, cutChars };
  const cached: ProxyTokenizer = { ...tokenizer, encodeText: (text) => cache.get(text)?.slice() ?? tokenizer.encodeText(text) };
  return { context: cutContext, tokenizer: cached, cutChars };
}
