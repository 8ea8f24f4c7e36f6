/** The held-out cases adapt.py plants, and their scoring by a guard into calibration evidence. */
import { readFileSync } from 'node:fs';
import { parseGuardInput } from '../core/adapters.js';
import { evidenceOf, type CalibrationCase } from '../core/calibration.js';
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

/** Each case's verdict as calibration evidence, and whether the guard blocked it at its own options. */
export async function scoreAll(guard: Guard, cases: readonly HoldoutCase[], options: ResolvedGuardOptions, onTick: () => void, signal?: AbortSignal): Promise<Array<{ c: HoldoutCase; e: CalibrationCase; blocked: boolean }>> {
  const out = [];
  for (const c of cases) {
    signal?.throwIfAborted();
    const verdict = await guard.check(c.input);
    const before = c.input.messages.every((m) => m.role !== 'tool');
    out.push({
      c,
      e: { label: c.label, real: c.kind === 'benign' || c.kind === 'benign_copy', conversation: c.conversation, evidence: evidenceOf(verdict, options, before) },
      blocked: verdict.decision === 'block',
    });
    onTick();
  }
  return out;
}
