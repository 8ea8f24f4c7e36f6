/**
 * What `edgearmor adapt` and `edgearmor calibrate` share: the user's traffic read and counted against the
 * minimum, its conversations split by a seed, and guard cases planted into some of them by
 * model/adapt.py --plant-only (model/plant.py: real calls, attacks followed and ignored).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidInputError } from '../core/errors.js';
import { readHoldoutCases, type HoldoutCase } from './holdout.js';
import { runPython } from './python.js';
import { callSites, readTraffic, type CallSite, type Conversation, type TrafficFormat } from './traffic.js';

/** A seeded shuffle (mulberry32), so a split depends on the seed only. */
export function shuffled<T>(items: readonly T[], seed: number): T[] {
  let a = seed >>> 0;
  const rand = (): number => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** Rows as JSON Lines. */
export const jsonl = (rows: readonly unknown[]): string => rows.map((r) => JSON.stringify(r)).join('\n') + (rows.length ? '\n' : '');

/** A conversation as model/adapt.py reads it. */
export const conversationRecord = (c: Conversation) => ({ id: c.id, messages: c.messages, tools: c.tools });

/** A traffic file read for planting: every conversation, each one's call sites, those with calls, and the shapes seen. */
export interface PlantableTraffic {
  conversations: Conversation[];
  sitesOf: Map<Conversation, CallSite[]>;
  /** Conversations with a tool call after a user message. */
  withCalls: Conversation[];
  formats: Partial<Record<TrafficFormat, number>>;
}

/**
 * Reads and validates the traffic and refuses one with fewer than `minConversations` conversations with a
 * tool call after a user message (`need` names what needs them, `advice` how many are better).
 */
export function readPlantableTraffic(file: string, format: TrafficFormat | undefined, minConversations: number, need: string, advice: string): PlantableTraffic {
  const conversations = readTraffic(file, format);
  const sitesOf = new Map(conversations.map((c) => [c, callSites(c)]));
  const withCalls = conversations.filter((c) => sitesOf.get(c)!.length > 0);
  if (withCalls.length < minConversations) {
    throw new InvalidInputError(
      `${file}: ${withCalls.length} conversations with a tool call after a user message (of ${conversations.length}); ${need} needs at least ${minConversations}, ${advice}.`,
      { conversations: conversations.length, withToolCalls: withCalls.length, needed: minConversations },
    );
  }
  const formats: Partial<Record<TrafficFormat, number>> = {};
  for (const c of conversations) formats[c.format] = (formats[c.format] ?? 0) + 1;
  return { conversations, sitesOf, withCalls, formats };
}

/** What {@link plantCases} plants and where. */
export interface PlantOptions {
  python: string;
  /** The work directory: traffic-holdout.jsonl is written there (traffic-train.jsonl must be there already), holdout-cases.jsonl comes back. */
  work: string;
  /** The conversations planted into. */
  holdout: readonly Conversation[];
  seed: number;
  families: 'all' | 'train';
  /** Most cases planted (~40% real calls, ~35% followed and ~25% ignored attacks). */
  cases: number;
  threads: number;
  onEvent?: (event: Record<string, unknown>) => void;
  signal?: AbortSignal;
}

/** The arguments of model/adapt.py that fix the planted cases (the same for planting alone and for training). */
export function plantArgs(o: Pick<PlantOptions, 'work' | 'seed' | 'families' | 'cases' | 'threads'>): string[] {
  return ['--work', o.work, '--seed', String(o.seed), '--threads', String(o.threads), '--families', o.families, '--holdout-cases', String(o.cases)];
}

/** Plants guard cases into the held-out conversations (model/adapt.py --plant-only) and returns them with the file's text. */
export async function plantCases(o: PlantOptions): Promise<{ cases: HoldoutCase[]; text: string }> {
  writeFileSync(join(o.work, 'traffic-holdout.jsonl'), jsonl(o.holdout.map(conversationRecord)));
  await runPython(o.python, [...plantArgs(o), '--plant-only'], o.threads, join(o.work, 'plant-py.log'), o.onEvent ?? (() => undefined), o.signal);
  const path = join(o.work, 'holdout-cases.jsonl');
  return { cases: readHoldoutCases(path), text: readFileSync(path, 'utf8') };
}
