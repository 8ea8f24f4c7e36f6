/**
 * How options are declared: a tree of groups and options, each option with its valibot schema, its
 * default, a one-line summary, and (when it has one) its name outside code. From one declaration come
 * the validator, the defaults, the types (inferred), the environment variables, the CLI flags, the
 * usage text and docs/options.md's table; and every problem is one structured issue, rendered by one formatter.
 */
import * as v from 'valibot';
import { describeType, formatIssuePath, isPlainObject } from './json.js';

/** How an option is written as text: in an environment variable or after a CLI flag. */
export type OptionTextKind = 'number' | 'boolean' | 'text' | 'list' | 'count-or-none';

/** An option's name outside code: `EDGEARMOR_<NAME>` and the seeds' `CAUSAL_ARMOR_<NAME>`, and the flag `--<name>` (kebab case, first name only). */
export interface ExternalName {
  /** Upper snake case; names after the first are aliases of the environment only. */
  names: readonly [string, ...string[]];
  text: OptionTextKind;
}

/** What the tables say about an option. */
export interface OptionMeta {
  /** One line for docs/options.md's options table and the CLI's usage. */
  summary: string;
  /** The default as a table shows it, where the value alone does not say it (null: "every call"). */
  defaultText?: string;
  external?: ExternalName;
}

/** One option: its schema (whose messages say what is allowed), default and description. */
export interface OptionLeaf<S extends v.GenericSchema = v.GenericSchema, D = unknown> {
  readonly kind: 'option';
  readonly schema: S;
  readonly defaultValue: D;
  readonly meta: OptionMeta;
}

/** A check across a group's options; `reason` is the whole message (what is wrong and what to do). */
export interface GroupRule {
  check: (value: Record<string, unknown>) => boolean;
  reason: string;
}

/** A group of options, given as one object. */
export interface OptionGroup<E extends OptionEntries = OptionEntries> {
  readonly kind: 'group';
  readonly entries: E;
  readonly summary: string;
  readonly rules: readonly GroupRule[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type OptionNode = OptionLeaf<any, any> | OptionGroup<any>;
export type OptionEntries = { readonly [key: string]: OptionNode };

/** An option as callers give it (every option optional). */
export type OptionsInput<G extends OptionGroup> = { [K in keyof G['entries']]?: NodeInput<G['entries'][K]> | undefined };
type NodeInput<N> = N extends OptionLeaf<infer S, unknown> ? v.InferInput<S> : N extends OptionGroup ? OptionsInput<N> : never;

/** Options after defaults and validation: plain data that survives structuredClone. */
export type OptionsResolved<G extends OptionGroup> = { [K in keyof G['entries']]: NodeResolved<G['entries'][K]> };
type NodeResolved<N> = N extends OptionLeaf<infer S, infer D> ? v.InferOutput<S> | D : N extends OptionGroup ? OptionsResolved<N> : never;

/** Declares one option. */
export function option<S extends v.GenericSchema, D extends v.InferOutput<S> | null>(schema: S, defaultValue: D, meta: OptionMeta): OptionLeaf<S, D> {
  return { kind: 'option', schema, defaultValue, meta };
}

/** Declares a group of options, with the checks that span them. */
export function group<const E extends OptionEntries>(entries: E, summary: string, rules: readonly GroupRule[] = []): OptionGroup<E> {
  return { kind: 'group', entries, summary, rules };
}

/** The same group with other defaults (the guard's MindGuard has its own AIR threshold). */
export function withDefaults<E extends OptionEntries>(base: OptionGroup<E>, defaults: { [K in keyof E]?: unknown }, summary = base.summary): OptionGroup<E> {
  const entries = Object.fromEntries(
    Object.entries(base.entries).map(([key, node]) => [key, key in defaults && node.kind === 'option' ? { ...node, defaultValue: defaults[key] } : node]),
  ) as unknown as E;
  return { ...base, entries, summary };
}

/** The schemas options are made of, each with the message that says what it allows. */
export const integerFrom = (min: number) => v.pipe(v.number(`an integer >= ${min}`), v.integer(`an integer >= ${min}`), v.minValue(min, `an integer >= ${min}`));
/** One of the given strings (the message lists them). */
export const oneOf = <const T extends string>(values: readonly [T, ...T[]]) => v.picklist(values, values.map((a) => `"${a}"`).join(' | '));
/** A string that is not blank, `allowed` naming what it should be. */
export const nonBlank = (allowed = 'a non-empty string') => v.pipe(v.string(allowed), v.check((s: string) => s.trim() !== '', allowed));

// Messages that are a whole reason ("received an empty list, which would..."), not what is allowed, by the code of their issue.
const REASONS = new Map<string, OptionIssue['code']>();

/** A check of one option's value whose message is the whole reason it is refused (the value has the right type). */
export function refuse<T>(check: (value: T) => boolean, reason: string): v.CheckAction<T, string> {
  REASONS.set(reason, 'invalid-value');
  return v.check(check, reason);
}

function schemaOf(node: OptionNode): v.GenericSchema {
  if (node.kind === 'option') return node.schema;
  const entries = Object.fromEntries(Object.entries(node.entries as OptionEntries).map(([key, child]) => [key, v.optional(schemaOf(child))]));
  const known = Object.keys(node.entries).join(', ');
  const rules = node.rules.map((rule) => {
    REASONS.set(rule.reason, 'conflict');
    return v.check<Record<string, unknown>, string>(rule.check, rule.reason);
  });
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, 'an object'), v.strictObject(entries, known), ...rules) as unknown as v.GenericSchema;
}

/** One problem with the options given. */
export interface OptionIssue {
  /** 'unknown-option': a key no group has; 'invalid-value': a value the option does not take; 'conflict': options that exclude each other. */
  code: 'unknown-option' | 'invalid-value' | 'conflict';
  /** The option's dotted path ('' for the options as a whole). */
  path: string;
  /** What was given, as text (the key, for an unknown option). */
  received: string;
  /** What is allowed (the known options, for an unknown one). */
  allowed: string;
  /** The whole reason, where the value has the right type but is refused (an empty list, two lists that exclude each other). */
  reason?: string;
}

/** A value as an issue shows it: strings quoted, numbers as written, anything else by its type. */
export function shownValue(received: unknown): string {
  return typeof received === 'string' ? JSON.stringify(received) : typeof received === 'number' ? String(received) : describeType(received);
}

function toIssue(issue: v.BaseIssue<unknown>): OptionIssue {
  const path = formatIssuePath(issue.path);
  if (issue.type === 'strict_object') return { code: 'unknown-option', path, received: String(issue.input), allowed: issue.message };
  const reasonCode = issue.type === 'check' ? REASONS.get(issue.message) : undefined;
  if (reasonCode !== undefined) return { code: reasonCode, path, received: shownValue(issue.input), allowed: issue.message, reason: issue.message };
  return { code: 'invalid-value', path, received: shownValue(issue.input), allowed: issue.message };
}

/** The one formatter: an issue as one sentence, `subject` naming where the value came from (an environment variable, a flag). */
export function formatOptionIssue(issue: OptionIssue, subject?: string): string {
  const where = subject ?? (issue.path === '' ? 'options' : `option ${issue.path}`);
  if (issue.code === 'unknown-option') return `Unknown option ${issue.path}; known options are ${issue.allowed}.`;
  if (issue.reason !== undefined) return `Invalid ${where}: ${issue.reason}`;
  return `Invalid ${where}: received ${issue.received}; allowed: ${issue.allowed}.`;
}

/** Every issue in one message: the first in full, then the others. */
export function formatOptionIssues(issues: readonly OptionIssue[]): string {
  const [first, ...rest] = issues.map((issue) => formatOptionIssue(issue));
  return rest.length === 0 ? first! : `${first} Also: ${rest.join(' ')}`;
}

function defaultsOf<G extends OptionGroup>(node: G): OptionsResolved<G> {
  return Object.fromEntries(Object.entries(node.entries as OptionEntries).map(([key, child]) => [key, child.kind === 'option' ? child.defaultValue : defaultsOf(child)])) as OptionsResolved<G>;
}

function fill(node: OptionGroup, value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(node.entries as OptionEntries).map(([key, child]) => {
      const given = value[key];
      if (child.kind === 'group') return [key, fill(child, (given ?? {}) as Record<string, unknown>)];
      return [key, given === undefined ? child.defaultValue : given];
    }),
  );
}

/** A compiled group: parse (every issue, never throwing) and its defaults. */
export interface CompiledOptions<G extends OptionGroup> {
  readonly declaration: G;
  readonly defaults: OptionsResolved<G>;
  parse(input: unknown): { ok: true; value: OptionsResolved<G> } | { ok: false; issues: OptionIssue[] };
}

/** Compiles a group's declaration into its validator; the result never mutates its input and is plain cloneable data. */
export function compileOptions<G extends OptionGroup>(declaration: G): CompiledOptions<G> {
  const schema = schemaOf(declaration);
  return {
    declaration,
    defaults: deepFreeze(defaultsOf(declaration)),
    parse(input) {
      const result = v.safeParse(schema, input ?? {}, { abortEarly: false });
      if (!result.success) return { ok: false, issues: result.issues.map(toIssue) };
      return { ok: true, value: fill(declaration, result.output as Record<string, unknown>) as OptionsResolved<G> };
    },
  };
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** One declared option with its path: what the tables, the environment and the flags are made from. */
export interface OptionEntry {
  path: readonly string[];
  leaf: OptionLeaf;
}

/** Every option of a group, depth first, in declaration order. */
export function optionEntries(node: OptionGroup, prefix: readonly string[] = []): OptionEntry[] {
  return Object.entries(node.entries as OptionEntries).flatMap(([key, child]) =>
    child.kind === 'option' ? [{ path: [...prefix, key], leaf: child as OptionLeaf }] : optionEntries(child, [...prefix, key]),
  );
}
