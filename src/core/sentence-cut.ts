/**
 * Which part of a too-long message survives the cut to the model's window. A plain middle cut lets an
 * attacker pad a tool result until the injected sentence sits in the middle, and the guard then
 * scores text without it. The cut here keeps, before anything else, the sentences that name the
 * proposed call (its tool or one of its argument values): the text that can have moved the call. Half
 * of the rest goes to those sentences' surroundings, nearest first: a sentence kept alone would make any
 * result look as if it pointed at the call (a search result cut down to the one link the user picked
 * explains the call without the user). The other half goes to the head and the tail, as before.
 */
import type { JsonValue, ToolCall } from './types.js';

/** Argument values shorter than this are too common to mark a sentence as naming the call. */
export const MIN_CALL_TERM_CHARS = 4;

/** Of a sentence longer than this many tokens, only this many around each mention of the call are kept (text without punctuation is one long sentence). */
export const MAX_SENTENCE_TOKENS = 48;

/** The string and number values inside a JSON value (numbers as written by String), in order. */
export function jsonLeaves(value: JsonValue): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value === 'number') return [String(value)];
  if (Array.isArray(value)) return value.flatMap(jsonLeaves);
  if (value !== null && typeof value === 'object') return Object.values(value).flatMap(jsonLeaves);
  return [];
}

/** The words that mark a sentence as naming the call: its tool name (as written and with spaces for '_' and '-') and its argument values, lower-cased. */
export function callTerms(action: Pick<ToolCall, 'name' | 'arguments'>): string[] {
  const terms = [action.name, action.name.replace(/[_-]+/g, ' '), ...jsonLeaves(action.arguments)]
    .map((t) => t.trim().toLowerCase())
    .filter((t) => t.length >= MIN_CALL_TERM_CHARS);
  return [...new Set(terms)];
}

/** Token-index ranges [start, end) of the sentences of a message, given each token's text: a sentence ends after '.', '!' or '?' before whitespace, and at a line break. */
export function sentenceRanges(pieces: readonly string[]): Array<[number, number]> {
  const ranges: Array<[number, number]> = [];
  let start = 0;
  pieces.forEach((piece, i) => {
    const next = pieces[i + 1];
    const ends =
      next === undefined || /[\n\r]\s*$/.test(piece) || /^[\n\r]/.test(next) || (/[.!?]["')\]]*\s*$/.test(piece) && /^\s/.test(next));
    if (ends) {
      ranges.push([start, i + 1]);
      start = i + 1;
    }
  });
  return ranges;
}

/** Token indexes of a sentence to keep for the call: all of it, or MAX_SENTENCE_TOKENS around each mention in a longer one; empty when it names nothing. */
function callTokens(pieces: readonly string[], [a, b]: [number, number], terms: readonly string[]): number[] {
  const starts: number[] = [];
  let text = '';
  for (let i = a; i < b; i++) {
    starts.push(text.length);
    text += pieces[i]!;
  }
  const lower = text.toLowerCase();
  const mentions: Array<[number, number]> = [];
  for (const t of terms) for (let at = lower.indexOf(t); at >= 0; at = lower.indexOf(t, at + t.length)) mentions.push([at, at + t.length]);
  if (mentions.length === 0) return [];
  if (b - a <= MAX_SENTENCE_TOKENS) return Array.from({ length: b - a }, (_, k) => a + k);
  // The token holding a character: the last start at or before it (binary search; an attacker controls how many mentions there are).
  const tokenAt = (offset: number) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return a + lo;
  };
  const out = new Set<number>();
  const half = MAX_SENTENCE_TOKENS / 2;
  for (const [from, to] of mentions) {
    const first = Math.max(a, tokenAt(from) - half);
    const last = Math.min(b - 1, tokenAt(to - 1) + half);
    for (let i = first; i <= last; i++) out.add(i);
  }
  return [...out].sort((x, y) => x - y);
}

/** Per sentence of a message that names the call (in order), the indexes of its tokens to keep or remove: all of them, or MAX_SENTENCE_TOKENS around each mention in a longer one. */
export function callSentenceTokens(pieces: readonly string[], terms: readonly string[]): number[][] {
  if (terms.length === 0) return [];
  return sentenceRanges(pieces)
    .map((range) => callTokens(pieces, range, terms))
    .filter((tokens) => tokens.length > 0);
}

/**
 * Marks up to `budget` untaken tokens, nearest to a token of `near` first (ties: the earlier token), by
 * distance computed in two linear passes and bucketed by distance: linear in the message length.
 */
function markNearest(take: Uint8Array, near: readonly number[], budget: number, mark: (i: number) => void): void {
  const n = take.length;
  if (budget <= 0 || near.length === 0) return;
  const dist = new Int32Array(n).fill(n);
  for (const i of near) dist[i] = 0;
  for (let i = 1; i < n; i++) dist[i] = Math.min(dist[i]!, dist[i - 1]! + 1);
  for (let i = n - 2; i >= 0; i--) dist[i] = Math.min(dist[i]!, dist[i + 1]! + 1);
  const byDistance: number[][] = [];
  for (let i = 0; i < n; i++) if (take[i] === 0) (byDistance[dist[i]!] ??= []).push(i);
  let left = budget;
  for (const bucket of byDistance) {
    for (const i of bucket ?? []) {
      if (left <= 0) return;
      mark(i);
      left -= 1;
    }
  }
}

/** What to keep of one message. */
export interface MessageCut {
  /** Indexes of the kept tokens, ascending. */
  kept: number[];
  /** Sentences kept because they name the call. */
  callSentences: number;
}

/**
 * Chooses `keep` tokens of a message whose tokens read `pieces`: its first and last token (a message's
 * frame), then every sentence that names the call (in order, while they fit), then half of what is left
 * nearest those sentences, then head and tail halves of the rest. With no such sentence this is the
 * plain middle cut.
 */
export function planMessageCut(pieces: readonly string[], keep: number, terms: readonly string[]): MessageCut {
  const n = pieces.length;
  if (keep >= n) return { kept: pieces.map((_, i) => i), callSentences: 0 };
  const take = new Uint8Array(n);
  let left = keep;
  const mark = (i: number) => {
    if (left > 0 && take[i] === 0) {
      take[i] = 1;
      left -= 1;
    }
  };
  if (keep >= 2) {
    mark(0);
    mark(n - 1);
  }
  let callSentences = 0;
  const callTokenIndexes: number[] = [];
  for (const tokens of callSentenceTokens(pieces, terms)) {
    if (left <= 0) break;
    for (const t of tokens) {
      mark(t);
      callTokenIndexes.push(t);
    }
    callSentences += 1;
  }
  markNearest(take, callTokenIndexes, Math.ceil(left / 2), mark);
  const headShare = Math.ceil(left / 2);
  for (let i = 0, taken = 0; i < n && taken < headShare; i++) {
    if (take[i] === 0) {
      mark(i);
      taken += 1;
    }
  }
  for (let i = n - 1; i >= 0 && left > 0; i--) mark(i);
  const kept: number[] = [];
  take.forEach((t, i) => {
    if (t === 1) kept.push(i);
  });
  return { kept, callSentences };
}

/** How far from a mention of the call a sentence boundary is looked for, in characters. */
const SNIPPET_REACH_CHARS = 300;

/** At most this much text either side of a kept sentence comes with it, budget permitting (its surroundings; see planMessageCut). */
const SNIPPET_CONTEXT_CHARS = 600;

/**
 * The sentences of `text` that name the call (each around one mention, out to the nearest sentence
 * end within SNIPPET_REACH_CHARS), in order, overlapping ones merged, with as much of their
 * surroundings as the budget leaves (up to SNIPPET_CONTEXT_CHARS a side), at most `maxChars` in all:
 * what a character cut before tokenizing keeps from the middle it removes. Linear in the text's length.
 */
export function callSnippets(text: string, terms: readonly string[], maxChars: number): string[] {
  const lower = text.toLowerCase();
  const spans: Array<[number, number]> = [];
  for (const t of terms) {
    for (let at = lower.indexOf(t); at >= 0; at = lower.indexOf(t, at + t.length)) {
      let start = at;
      while (start > 0 && at - start < SNIPPET_REACH_CHARS && !/[.!?\n]/.test(text[start - 1]!)) start -= 1;
      let end = at + t.length;
      while (end < text.length && end - at < SNIPPET_REACH_CHARS && !/[.!?\n]/.test(text[end - 1]!)) end += 1;
      spans.push([start, end]);
      if (spans.length > maxChars) break;
    }
  }
  spans.sort((a, b) => a[0] - b[0]);
  const sentences: Array<[number, number]> = [];
  let left = maxChars;
  for (const [a, b] of merge(spans)) {
    if (b - a > left) break;
    sentences.push([a, b]);
    left -= b - a;
  }
  if (sentences.length === 0) return [];
  // What the sentences leave of the budget is shared out as their surroundings; widened spans that
  // overlap merge, so the total stays within maxChars.
  const context = Math.min(SNIPPET_CONTEXT_CHARS, Math.floor(left / (2 * sentences.length)));
  const widened = sentences.map(([a, b]): [number, number] => [Math.max(0, a - context), Math.min(text.length, b + context)]);
  return merge(widened).map(([a, b]) => text.slice(a, b));
}

/** Sorted [start, end) ranges with the overlapping ones joined. */
function merge(ranges: ReadonlyArray<[number, number]>): Array<[number, number]> {
  const merged: Array<[number, number]> = [];
  for (const [a, b] of ranges) {
    const last = merged[merged.length - 1];
    if (last && a <= last[1]) last[1] = Math.max(last[1], b);
    else merged.push([a, b]);
  }
  return merged;
}
