/** The held-out cases adapt.py plants, and their scoring by a guard into calibration evidence. */
import { readFileSync } from 'node:fs';
import { parseGuardInput } from '../core/adapters.js';
import { evidenceOf, type CalibrationCase } from '../core/calibration.js';
import { callLogProbPerToken } from '../core/familiarity.js';
import type { Guard } from '../core/guard-api.js';
import type { ResolvedGuardOptions } from '../core/options.js';
import type { GuardInput } from '../core/types.js';
import type { Verdict } from '../core/verdict.js';
import type { ConductorGuard } from '../core/conductor.js';

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

/** One scored held-out case: its calibration evidence, whether the guard blocked it at its own options, how well it predicted the call. */
export interface ScoredCase {
  c: HoldoutCase;
  e: CalibrationCase;
  blocked: boolean;
  logProbPerToken: number | null;
}

/** The log-probability per action token of each real call the model judged (adapt's and calibrate's familiarity). */
export function realCallLogProbs(scored: readonly ScoredCase[]): number[] {
  return scored.flatMap((x) => (x.e.real && x.logProbPerToken !== null ? [x.logProbPerToken] : []));
}

function scoredCase(c: HoldoutCase, verdict: Verdict, options: ResolvedGuardOptions): ScoredCase {
  const before = c.input.messages.every((m) => m.role !== 'tool');
  return {
    c,
    e: { label: c.label, real: c.kind === 'benign' || c.kind === 'benign_copy', conversation: c.conversation, evidence: evidenceOf(verdict, options, before) },
    blocked: verdict.decision === 'block',
    logProbPerToken: verdict.reason === 'model' ? callLogProbPerToken(verdict.attribution) : null,
  };
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
): Promise<ScoredCase[]> {
  const out = [];
  for (const c of cases) {
    signal?.throwIfAborted();
    if (Date.now() >= deadlineMs) break;
    out.push(scoredCase(c, await guard.check(c.input, signal ? { signal } : {}), options));
    onTick();
  }
  return out;
}

/**
 * A pass's pace: what its work has cost so far, per unit (an input's characters), so that a piece of work is
 * started only where, at that pace, it ends by the deadline. A pass checks whole conversations, and one long
 * conversation with many planted cases can cost more than the pass's whole share: started just before the
 * deadline, it would run the pass that far past it.
 */
export class Pace {
  private units = 0;
  private readonly start = Date.now();

  /** `guessMs`: what a unit is taken to cost before any is done (none: the first piece starts if the deadline is ahead). */
  constructor(private readonly guessMs = 0) {}

  /** Whether `units` more, at the pace so far (or the guess), end by `deadlineMs`. */
  fits(units: number, deadlineMs: number): boolean {
    const now = Date.now();
    if (now >= deadlineMs) return false;
    const perUnit = this.units === 0 ? this.guessMs : (now - this.start) / this.units;
    return now + perUnit * units <= deadlineMs;
  }

  done(units: number): void {
    this.units += units;
  }
}

/** The size of a check's input, in the units a {@link Pace} counts: its JSON's characters. */
export const inputSize = (input: unknown): number => JSON.stringify(input).length;

/**
 * {@link scoreAll} a conversation at a time: the cases planted into one conversation are checked in one run
 * (`checkMany`), which computes the context they share once, each with the verdict a separate check gives it.
 * Conversations in the order their first case comes; the results in the cases' order; no conversation starts
 * that would, at the pace so far, end after `deadlineMs` (the pass stops there), so a run cut short has scored
 * whole conversations, except that scoring goes on until it has both an injected and a benign case (an
 * operating point needs both; the cases are shuffled, so that is a conversation or two).
 */
export async function scoreByConversation(
  guard: ConductorGuard,
  cases: readonly HoldoutCase[],
  options: ResolvedGuardOptions,
  onTick: () => void,
  signal?: AbortSignal,
  deadlineMs = Infinity,
): Promise<ScoredCase[]> {
  const groups = new Map<string, HoldoutCase[]>();
  for (const c of cases) groups.set(c.conversation, [...(groups.get(c.conversation) ?? []), c]);
  const scored = new Map<HoldoutCase, ScoredCase>();
  const labels = new Set<string>();
  const pace = new Pace();
  for (const group of groups.values()) {
    signal?.throwIfAborted();
    const size = group.reduce((n, c) => n + inputSize(c.input), 0);
    if (labels.size > 1 && !pace.fits(size, deadlineMs)) break;
    for (const c of group) labels.add(c.label);
    const verdicts = await guard.checkMany(group.map((c) => c.input), signal ? { signal } : {});
    group.forEach((c, i) => {
      scored.set(c, scoredCase(c, verdicts[i]!, options));
      onTick();
    });
    pace.done(size);
  }
  return cases.flatMap((c) => (scored.has(c) ? [scored.get(c)!] : []));
}

/** Share of the planted held-out cases that are benign: the real calls (40%) and the ignored attacks (25%) of model/plant.py's HOLDOUT_SHARES. */
export const HOLDOUT_BENIGN_SHARE = 0.65;

/** The binomial standard error of the benign blocks at the target FPR that the held-out set allows, as a share of the target. */
export const FPR_RELATIVE_STANDARD_ERROR = 0.5;

/** Fewest held-out cases planted whatever the budget: under this the ranking (ROC-AUC) itself is noise. */
export const MIN_HOLDOUT_CASES = 60;

/** Share of the budget each guard's held-out scoring may take at the measured time a check. */
export const HOLDOUT_TIME_SHARE = 0.08;

/** Screening's share of the budget, at most ... */
export const SCREEN_SHARE = 0.2;

/** ... and what screening, both held-out passes and the generator probe take together, at most: the rest is training's. */
export const SCORING_SHARE = 1 / 3;

/** Of that third, what the last checks' spread is given (a check slower than the pace before it). */
const SCORING_RESERVE = 0.01;

/** Minutes of the scoring third, once the base's held-out pass is measured. */
export interface ScoringPlan {
  /** Screening's: what the third leaves after the base's pass, the adapted model's (as long again) and the probe, at most {@link SCREEN_SHARE}. */
  screen: number;
  /** The adapted model's held-out pass and the probe, from the end of screening to the end of the third (less a 1% reserve). */
  adaptedAndProbe: (screenMinutes: number) => number;
}

/**
 * How the scoring third is spent: the base's held-out pass comes first (bounded by its own share), screening
 * gets what the third leaves after it, an adapted pass as long as the base's and the generator probe, and the
 * adapted pass ends where the third does (it scores the same cases with a model of the same size; a pass cut
 * short compares the cases both scored).
 */
export function scoringPlan(budgetMinutes: number, baseHoldoutMinutes: number, probeMinutes: number): ScoringPlan {
  const third = budgetMinutes * SCORING_SHARE;
  return {
    screen: Math.max(0, Math.min(budgetMinutes * SCREEN_SHARE, third - 2 * baseHoldoutMinutes - probeMinutes)),
    adaptedAndProbe: (screenMinutes) => Math.max(0, (1 - SCORING_RESERVE) * third - baseHoldoutMinutes - screenMinutes),
  };
}

/** The held-out cases to plant, why that many, and the precision of the benign blocks they give. */
export interface HoldoutPlan {
  cases: number;
  /** Benign cases among them (about {@link HOLDOUT_BENIGN_SHARE}). */
  benign: number;
  /** Benign cases the operating point needs: the FPR at the target measured to a standard error of half the target. */
  benignNeeded: number;
  /** sqrt(p (1 - p) / benign) at the target p: the standard error of the FPR these cases measure. */
  fprStandardError: number;
  /** 'precision': as many as the point needs; 'time': fewer, all the budget's share allowed; 'floor': {@link MIN_HOLDOUT_CASES}. */
  limitedBy: 'precision' | 'time' | 'floor';
}

/**
 * How many held-out cases to plant: enough benign ones to place the operating point at `targetFpr` with a
 * binomial standard error of at most half the target (sqrt(p (1 - p) / n) <= p / 2, so n >= 4 (1 - p) / p: 130 benign checks at 3%, 76 at
 * 5%), and no more; fewer when scoring them at the measured time a check would take more than
 * {@link HOLDOUT_TIME_SHARE} of the budget, never fewer than {@link MIN_HOLDOUT_CASES}. The standard error says
 * what the point is worth: at 130 benign checks one block more or less moves the FPR by 0.8 points.
 */
export function holdoutPlan(budgetMinutes: number, secondsPerCheck: number, targetFpr: number): HoldoutPlan {
  const p = Math.min(Math.max(targetFpr, 1e-3), 0.5);
  const benignNeeded = Math.ceil((1 - p) / (p * FPR_RELATIVE_STANDARD_ERROR ** 2));
  const byPrecision = Math.ceil(benignNeeded / HOLDOUT_BENIGN_SHARE);
  const byTime = Math.floor((budgetMinutes * HOLDOUT_TIME_SHARE * 60) / Math.max(secondsPerCheck, 0.01));
  const cases = Math.max(MIN_HOLDOUT_CASES, Math.min(byPrecision, byTime));
  const limitedBy = cases === byPrecision ? 'precision' : cases === MIN_HOLDOUT_CASES && byTime < MIN_HOLDOUT_CASES ? 'floor' : 'time';
  const benign = Math.round(cases * HOLDOUT_BENIGN_SHARE);
  return { cases, benign, benignNeeded, fprStandardError: Math.sqrt((p * (1 - p)) / Math.max(1, benign)), limitedBy };
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
