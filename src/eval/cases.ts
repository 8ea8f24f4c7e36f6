/**
 * Evaluation cases: guard cases with a label and the metadata the report groups by, read from
 * JSON Lines suites (the generator's splits, AgentDojo dev.jsonl, the adversarial fixture), and a
 * deterministic, label-stratified sample of them.
 */
import { readFileSync, existsSync } from 'node:fs';
import { basename } from 'node:path';
import { parseGuardInput } from '../core/adapters.js';
import { InvalidInputError } from '../core/errors.js';
import { isPlainObject } from '../core/json.js';
import type { GuardInput } from '../core/types.js';
import { Rng } from '../scenarios/rng.js';

/** The ground truth of a case. */
export type CaseLabel = 'injected' | 'benign';

/** One labelled guard case and what the report groups it by. */
export interface EvalCase {
  id: string;
  label: CaseLabel;
  /** The `suite` field, or the file's base name without extension. */
  suite: string;
  /** The file the case came from. */
  file: string;
  /**
   * The evaluation set the report's per-set table groups by: the file's name, split by suite when the
   * file holds two to four suites (AgentDojo dev: `dev/banking`, `dev/slack`). Set by readEvalCases.
   */
  set?: string;
  /** AgentDojo's attack name, or `vector/type/style` for generator cases; 'none' when absent. */
  attack: string;
  /** The agent pipeline (AgentDojo), or 'none'. */
  pipeline: string;
  /** The generator's case kind or AgentDojo's benign_kind, or 'none'. */
  kind: string;
  /** Indexes of the messages that carry the injection. */
  injectedIn: number[];
  /** The tool whose description is poisoned, for tool-description cases. */
  poisonedTool: string | null;
  input: GuardInput;
}

function str(value: unknown, fallback: string): string {
  return typeof value === 'string' && value !== '' ? value : fallback;
}

function attackName(value: unknown): string {
  if (typeof value === 'string') return value === '' ? 'none' : value;
  if (isPlainObject(value)) {
    const parts = ['vector', 'type', 'style'].map((k) => value[k]).filter((v): v is string => typeof v === 'string');
    return parts.length > 0 ? parts.join('/') : 'none';
  }
  return 'none';
}

/** Turns one parsed JSON object into an EvalCase; throws InvalidInputError naming the field. */
export function toEvalCase(value: unknown, file: string, where: string, index: number): EvalCase {
  if (!isPlainObject(value)) throw new InvalidInputError(`${file}: ${where}: expected a case object, received ${typeof value}`, { file });
  const label = value['label'];
  if (label !== 'injected' && label !== 'benign') {
    throw new InvalidInputError(`${file}: ${where}: label: received ${JSON.stringify(label)}; allowed: "injected", "benign"`, { file });
  }
  let input: GuardInput;
  try {
    input = parseGuardInput(value);
  } catch (e) {
    throw new InvalidInputError(`${file}: ${where}: ${(e as Error).message}`, { file });
  }
  const injected = value['injected_in'];
  const id = value['id'];
  return {
    id: typeof id === 'string' || typeof id === 'number' ? String(id) : `${basename(file)}:${index + 1}`,
    label,
    suite: str(value['suite'], basename(file).replace(/\.(jsonl|ndjson|json)$/, '')),
    file,
    attack: attackName(value['attack']),
    pipeline: str(value['pipeline'], 'none'),
    kind: str(value['kind'], str(value['benign_kind'], 'none')),
    injectedIn: Array.isArray(injected) ? injected.filter((x): x is number => Number.isInteger(x)) : [],
    poisonedTool: typeof value['poisoned_tool'] === 'string' ? value['poisoned_tool'] : null,
    input,
  };
}

/** Reads and validates every case of a JSON Lines file. */
export function readEvalCases(path: string): EvalCase[] {
  if (!existsSync(path)) throw new InvalidInputError(`${path}: no such file`, { path });
  const out: EvalCase[] = [];
  readFileSync(path, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '') return;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch (e) {
        throw new InvalidInputError(`${path}: line ${i + 1} is not valid JSON (${(e as Error).message})`, { path, line: i + 1 });
      }
      out.push(toEvalCase(value, path, `line ${i + 1}`, out.length));
    });
  if (out.length === 0) throw new InvalidInputError(`${path}: no cases found`, { path });
  const stem = basename(path).replace(/\.(jsonl|ndjson|json)$/, '');
  const suites = new Set(out.map((c) => c.suite));
  const bySuite = suites.size >= 2 && suites.size <= 4;
  return out.map((c) => ({ ...c, set: bySuite ? `${stem}/${c.suite}` : stem }));
}

function shuffled<T>(items: readonly T[], rng: Rng): T[] {
  const a = [...items];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    [a[i], a[j]] = [a[j]!, a[i]!];
  }
  return a;
}

/**
 * A deterministic sample of `limit` cases for a seed: one seeded shuffle, then from each
 * (file, label) stratum its proportional share (largest remainders), kept in shuffled order.
 */
export function sampleCases(cases: readonly EvalCase[], limit: number | null, seed: number): EvalCase[] {
  if (limit === null || limit >= cases.length) return [...cases];
  const order = shuffled(cases, new Rng(`eval-sample:${seed}`));
  const strata = new Map<string, EvalCase[]>();
  for (const c of order) {
    const key = `${c.file}\u0000${c.label}`;
    const list = strata.get(key);
    if (list) list.push(c);
    else strata.set(key, [c]);
  }
  const keys = [...strata.keys()].sort();
  const exact = keys.map((k) => (strata.get(k)!.length * limit) / cases.length);
  const quota = exact.map(Math.floor);
  let left = limit - quota.reduce((a, b) => a + b, 0);
  const byRemainder = keys.map((_, i) => i).sort((a, b) => exact[b]! - quota[b]! - (exact[a]! - quota[a]!) || a - b);
  for (const i of byRemainder) {
    if (left === 0) break;
    quota[i]!++;
    left--;
  }
  const chosen = new Set<EvalCase>();
  keys.forEach((k, i) => strata.get(k)!.slice(0, quota[i]!).forEach((c) => chosen.add(c)));
  return order.filter((c) => chosen.has(c));
}
