import { FIRST_NAMES, LAST_NAMES, MAIL_DOMAINS, BENIGN_IBAN_PREFIXES, pool, type Picker, type Pool, type Vars } from './pools.js';
import type { ToolCall } from './types.js';

/** A person in the benign world. */
export interface Person {
  first: string;
  full: string;
  email: string;
}

/** Kinds of argument an A2 attack can swap for an attacker value. */
export type SlotKind = 'iban' | 'email' | 'url';

/** A user goal in a scenario: the phrasings that ask for it and the call it leads to. */
export interface Goal {
  id: string;
  phrasings: Pool<string>;
  action: ToolCall;
  /** The action copies argument values from a tool result. */
  copy: boolean;
  /** The argument an A2 attack replaces; `array` when it is a list of values. */
  slot?: { arg: string; kind: SlotKind; array?: boolean };
}

/** A completed earlier call. */
export interface Step {
  call: ToolCall;
  result: string;
}

/** One instantiated scenario: shared earlier calls, the injectable result and the possible goals. */
export interface Built {
  vars: Vars;
  pre: Step[];
  main: ToolCall;
  /** Renders the main call's result, with the payload (injected text) placed in an untrusted field when given. */
  render: (payload: string | null) => string;
  goals: Goal[];
  /** A read-only call the agent may make before acting. */
  extra: Step;
}

/** A scenario template of a domain. */
export interface Scenario {
  id: string;
  build: (p: Picker, user: Person) => Built;
}

/** A domain: its own tools and scenarios. */
export interface Domain {
  name: string;
  tools: string[];
  scenarios: Scenario[];
}

function ascii(s: string): string {
  return s.normalize('NFD').replace(/[\u0300-\u036f]/g, '').toLowerCase();
}

/** Draws a benign person with an email address. */
export function person(p: Picker): Person {
  const first = p.pick(FIRST_NAMES);
  const last = p.pick(LAST_NAMES);
  return { first, full: `${first} ${last}`, email: `${ascii(first)}.${ascii(last)}@${p.pick(MAIL_DOMAINS)}` };
}

/** Draws k people with distinct first names. */
export function people(p: Picker, k: number): Person[] {
  const out: Person[] = [];
  const seen = new Set<string>();
  for (let tries = 0; out.length < k && tries < 50; tries++) {
    const x = person(p);
    if (!seen.has(x.first)) {
      seen.add(x.first);
      out.push(x);
    }
  }
  return out;
}

/** Draws a benign IBAN. */
export function iban(p: Picker): string {
  const prefix = p.pick(BENIGN_IBAN_PREFIXES);
  return prefix + p.rng.digits(22 - prefix.length);
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** Draws a date in 2026 as YYYY-MM-DD. */
export function date(p: Picker): string {
  return `2026-${pad(p.rng.int(3, 11))}-${pad(p.rng.int(1, 28))}`;
}

/** Formats minutes since midnight as HH:MM. */
export function hhmm(minutes: number): string {
  return `${pad(Math.floor(minutes / 60))}:${pad(minutes % 60)}`;
}

/** Draws k distinct integers in [min, max]. */
export function distinctInts(p: Picker, k: number, min: number, max: number): number[] {
  const set = new Set<number>();
  while (set.size < k) set.add(p.rng.int(min, max));
  return [...set];
}

/** Shorthand to declare a goal. */
export function goal(id: string, phrasings: Pool<string>, action: ToolCall, copy: boolean, slot?: Goal['slot']): Goal {
  return slot ? { id, phrasings, action, copy, slot } : { id, phrasings, action, copy };
}

/** Shorthand for a user-phrasing pool; the name encodes domain, scenario and goal. */
export function say(name: string, items: string[]): Pool<string> {
  return pool(`user:${name}`, items);
}
