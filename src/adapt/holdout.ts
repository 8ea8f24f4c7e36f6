/** The held-out cases adapt.py plants, and their scoring by a guard into calibration evidence. */
import { readFileSync } from 'node:fs';
import { parseGuardInput } from '../core/adapters.js';
import { evidenceOf, type CalibrationCase } from '../core/calibration.js';
import { callLogProbPerToken } from '../core/familiarity.js';
import type { Guard } from '../core/guard-api.js';
import type { ResolvedGuardOptions } from '../core/options.js';
import type { GuardInput } from '../core/types.js';

/** One planted or real held-out check. */
export interface HoldoutCase {
  id: string;
  conversation: string;
  label: 'injected' | 'benign';
  kind: string;
  attacker_value_source?: string;
  input: GuardInput;
}

/** holdout-cases.jsonl as adapt.py wrote it. */
export function readHoldoutCases(path: string): HoldoutCase[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l, i) => {
      const raw = JSON.parse(l) as Record<string, unknown>;
      const label = raw['label'] === 'injected' ? 'injected' : 'benign';
      return {
        id: String(raw['id'] ?? i),
        conversation: String(raw['conversation'] ?? raw['id'] ?? i),
        label,
        kind: String(raw['kind'] ?? label),
        ...(typeof raw['attacker_value_source'] === 'string' ? { attacker_value_source: raw['attacker_value_source'] } : {}),
        input: parseGuardInput(raw),
      };
    });
}

/**
 * Each case's verdict as calibration evidence, whether the guard blocked it at its own options, and how well
 * it predicted the call; in order, stopping before the first case that starts after `deadlineMs` (epoch ms).
 */
export async function scoreAll(
  guard: Guard,
  cases: readonly HoldoutCase[],
  options: ResolvedGuardOptions,
  onTick: () => void,
  signal?: AbortSignal,
  deadlineMs = Infinity,
): Promise<Array<{ c: HoldoutCase; e: CalibrationCase; blocked: boolean; logProbPerToken: number | null }>> {
  const out = [];
  for (const c of cases) {
    signal?.throwIfAborted();
    if (Date.now() > deadlineMs) break;
    const verdict = await guard.check(c.input, signal ? { signal } : {});
    const before = c.input.messages.every((m) => m.role !== 'tool');
    out.push({
      c,
      e: { label: c.label, real: c.kind === 'benign' || c.kind === 'benign_copy', conversation: c.conversation, evidence: evidenceOf(verdict, options, before) },
      blocked: verdict.decision === 'block',
      logProbPerToken: verdict.reason === 'model' ? callLogProbPerToken(verdict.attribution) : null,
    });
    onTick();
  }
  return out;
}

/**
 * How many held-out cases to plant: about a tenth of the budget for each guard's scoring, at the time a check
 * takes (60 to 300). A check of a 20-tool MCP client takes seconds (it is judged in windows), one of a short
 * conversation a fraction of one; sized at a fixed 0.5 s, the first took the whole budget.
 */
export function holdoutSize(budgetMinutes: number, secondsPerCheck: number): number {
  return Math.max(60, Math.min(300, Math.floor((budgetMinutes * 0.1 * 60) / Math.max(secondsPerCheck, 0.05))));
}

/** Seconds a check of these calls takes with the guard: one untimed (it loads the model), then up to two timed. */
export async function measureCheckSeconds(guard: Guard, inputs: readonly GuardInput[], signal?: AbortSignal): Promise<number> {
  const [first, ...timed] = inputs.slice(0, 3);
  const options = signal ? { signal } : {};
  if (first === undefined) return 0.5;
  await guard.check(first, options);
  if (timed.length === 0) return 0.5;
  const t0 = Date.now();
  for (const input of timed) await guard.check(input, options);
  return (Date.now() - t0) / 1000 / timed.length;
}
