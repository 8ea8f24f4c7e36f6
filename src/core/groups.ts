/**
 * Groups of untrusted spans that are ablated together. Removing one span at a time misses an
 * injection that arrives twice, or a call that no single result explains: the attacker arranges the
 * conversation so that each removal leaves enough behind. Each group is scored as one more variant
 * (the conversation without all its members) and judged by the same rule as a single span.
 */
import type { StructuredContext } from './context.js';

/** Why spans were grouped: near-duplicate content, results of the same tool, or every untrusted span. */
export type GroupReason = 'duplicate' | 'same-tool' | 'all-untrusted';

/** A set of at least two untrusted spans removed together. */
export interface SpanGroup {
  /** Position among the groups, 0-based; variant ids use it (`no-group:<id>`). */
  id: number;
  /** Ids of the member spans, ascending. */
  spanIds: number[];
  /** Every reason that produced this member set (one group per distinct set). */
  reasons: GroupReason[];
}

/** Sentences shorter than this many words are too common to tie two results together. */
export const MIN_SHARED_SENTENCE_WORDS = 6;

/** Text as compared for near-duplicates: markup tags dropped, case folded, runs of whitespace and punctuation made one space. */
export function normalizeForComparison(text: string): string {
  return text
    .replace(/<[^>]{0,200}>/g, ' ')
    .toLowerCase()
    .replace(/[\s\p{P}\p{S}]+/gu, ' ')
    .trim();
}

const SENTENCE_BREAK = /(?<=[.!?])\s+|\n+/;

const isLong = (sentence: string): boolean => sentence.split(' ').length >= MIN_SHARED_SENTENCE_WORDS;

/**
 * A text normalised whole, and its normalised sentences of at least MIN_SHARED_SENTENCE_WORDS words. A text
 * without a sentence break (a page of CJK, a minified blob) is its one sentence and is normalised once: the guard
 * plans a check's groups on the caller's thread, where seven such window-sized results took 50 ms normalised twice.
 */
function comparisonKeys(text: string): { whole: string; sentences: string[] } {
  const pieces = text.split(SENTENCE_BREAK);
  const sentences = pieces.map(normalizeForComparison);
  return { whole: pieces.length === 1 ? sentences[0]! : normalizeForComparison(text), sentences: sentences.filter(isLong) };
}

/**
 * Near-duplicate clusters of texts, as lists of indexes: texts equal once normalised, or sharing a long
 * sentence (an injection planted in two different results), joined transitively. Linear in the text
 * length: every text and sentence is looked up in a map, never searched for in another text.
 */
export function nearDuplicateClusters(texts: readonly string[]): number[][] {
  const parent = texts.map((_, i) => i);
  const root = (i: number): number => {
    while (parent[i] !== i) i = parent[i] = parent[parent[i]!]!;
    return i;
  };
  const firstHolder = new Map<string, number>();
  const join = (key: string, i: number) => {
    const j = firstHolder.get(key);
    if (j === undefined) firstHolder.set(key, i);
    else parent[root(i)] = root(j);
  };
  texts.forEach((text, i) => {
    const { whole, sentences } = comparisonKeys(text);
    join(`text:${whole}`, i);
    for (const s of new Set(sentences)) join(`sentence:${s}`, i);
  });
  const clusters = new Map<number, number[]>();
  texts.forEach((_, i) => clusters.set(root(i), [...(clusters.get(root(i)) ?? []), i]));
  return [...clusters.values()];
}

/** The groups of a context's untrusted spans, one per distinct member set of two or more spans. */
export function untrustedGroups(context: Pick<StructuredContext, 'messages' | 'spans'>): SpanGroup[] {
  const spans = context.spans;
  if (spans.length < 2) return [];
  const candidates: Array<{ members: number[]; reason: GroupReason }> = [];

  // Near-duplicates, transitively: a result repeated three times is one group.
  const texts = spans.map((s) => context.messages[s.messageIndex]!.content);
  for (const cluster of nearDuplicateClusters(texts)) candidates.push({ members: cluster.map((i) => spans[i]!.id), reason: 'duplicate' });

  const byTool = new Map<string, number[]>();
  for (const s of spans) if (s.toolName !== null) byTool.set(s.toolName, [...(byTool.get(s.toolName) ?? []), s.id]);
  for (const members of byTool.values()) candidates.push({ members, reason: 'same-tool' });

  candidates.push({ members: spans.map((s) => s.id), reason: 'all-untrusted' });

  const groups: SpanGroup[] = [];
  for (const { members, reason } of candidates) {
    if (members.length < 2) continue;
    const spanIds = [...members].sort((x, y) => x - y);
    const same = groups.find((g) => g.spanIds.length === spanIds.length && g.spanIds.every((id, k) => id === spanIds[k]));
    if (same) {
      if (!same.reasons.includes(reason)) same.reasons.push(reason);
    } else groups.push({ id: groups.length, spanIds, reasons: [reason] });
  }
  return groups;
}
