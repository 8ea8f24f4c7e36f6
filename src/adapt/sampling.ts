/**
 * The order adapt draws the user's conversations in: across the traffic, not down the file. Each conversation
 * has a stratum (the agent's tool set, and the tool its first call used); every stratum is shuffled with the
 * seed and the strata are interleaved in proportion to their sizes, so any first part of the order (the held-out
 * conversations, the ones a screening budget reaches) holds each stratum at about its share of the traffic.
 */
import { shuffled } from './planting.js';
import type { CallSite, Conversation } from './traffic.js';

/** A seeded 32-bit hash of a stratum's key (FNV-1a over its characters, from the seed). */
function keyHash(seed: number, key: string): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return h;
}

/** A uniform draw in [0, 1) from a 32-bit state (one mulberry32 step). */
function uniform(state: number): number {
  let t = (state + 0x6d2b79f5) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

/**
 * The items in a stratified seeded order: item k of a stratum of n (after that stratum's own shuffle) sits at
 * (k + u) / n, u drawn once per stratum, and the order is by that position. The first m items then hold about
 * m x n / N of each stratum (systematic sampling), and a stratum of one item still appears, where its draw puts it.
 */
export function stratifiedOrder<T>(items: readonly T[], stratumOf: (item: T) => string, seed: number): T[] {
  const strata = new Map<string, T[]>();
  for (const item of items) {
    const key = stratumOf(item);
    strata.set(key, [...(strata.get(key) ?? []), item]);
  }
  const placed: Array<{ item: T; at: number; tie: number }> = [];
  let tie = 0;
  for (const [key, members] of strata) {
    const h = keyHash(seed, key);
    const u = uniform(h);
    shuffled(members, h).forEach((item, k) => placed.push({ item, at: (k + u) / members.length, tie: tie++ }));
  }
  return placed.sort((a, b) => a.at - b.at || a.tie - b.tie).map((p) => p.item);
}

/**
 * The strata of a traffic's conversations: the tool its first call used, prefixed by the agent (`agent-N/`,
 * numbered by first appearance) when the traffic holds conversations of more than one tool set. Names only:
 * no traffic text.
 */
export function conversationStrata(conversations: readonly Conversation[], sitesOf: ReadonlyMap<Conversation, readonly CallSite[]>): Map<Conversation, string> {
  const toolsets = new Map<string, number>();
  const setOf = (c: Conversation): number => {
    const key = c.tools.map((t) => t.name).sort().join('\u0000');
    if (!toolsets.has(key)) toolsets.set(key, toolsets.size + 1);
    return toolsets.get(key)!;
  };
  const sets = new Map(conversations.map((c) => [c, setOf(c)]));
  return new Map(
    conversations.map((c) => {
      const first = sitesOf.get(c)?.[0]?.input.action.name ?? '(no call)';
      return [c, toolsets.size > 1 ? `agent-${sets.get(c)}/${first}` : first];
    }),
  );
}

/** Per stratum, the conversations there are and how many of them `reached` holds, largest strata first. */
export function stratumCounts<T>(all: readonly T[], reached: ReadonlySet<T>, stratumOf: (item: T) => string): Array<{ stratum: string; conversations: number; reached: number }> {
  const counts = new Map<string, { stratum: string; conversations: number; reached: number }>();
  for (const item of all) {
    const stratum = stratumOf(item);
    const row = counts.get(stratum) ?? { stratum, conversations: 0, reached: 0 };
    row.conversations += 1;
    if (reached.has(item)) row.reached += 1;
    counts.set(stratum, row);
  }
  return [...counts.values()].sort((a, b) => b.conversations - a.conversations || a.stratum.localeCompare(b.stratum));
}
