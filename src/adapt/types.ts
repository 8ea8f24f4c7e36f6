/** The types of `edgearmor adapt`: its options, its progress events and adapt-report.json. */
import type { OperatingPoint, OperatingThresholds } from '../core/calibration.js';
import type { FamiliarityCount } from '../core/familiarity.js';
import type { HoldoutPlan } from './holdout.js';
import type { ResolvedTrainingDevice, TorchSpeed, TrainingDevice } from './machine.js';
import type { TrafficFormat } from './traffic.js';

/** Fewest conversations with a tool call after a user message that adaptation takes (`minConversations`'s default). */
export const MIN_ADAPT_CONVERSATIONS = 50;

/** The options of one adaptation. */
export interface AdaptOptions {
  /** The traffic file (.jsonl, one conversation a line). */
  traffic: string;
  /** Where the adapted model directory goes; must not exist or be empty. */
  out: string;
  /** The whole budget in minutes: screening, training, held-out scoring, export. @defaultValue 30 */
  minutes?: number;
  /** @defaultValue 1 */
  seed?: number;
  /** CPU threads for training and scoring. @defaultValue 2 */
  threads?: number;
  /**
   * Where training runs: a CUDA GPU when torch sees one (`auto`), the CPU, or a GPU or nothing (`cuda`). On a GPU
   * training ends when the held-out loss stops improving, usually long before its share of the budget.
   * Screening and scoring run on the CPU either way. @defaultValue 'auto'
   */
  device?: TrainingDevice;
  /** The traffic's shape; detected per line when absent. */
  format?: TrafficFormat;
  /** Phrasing families the planted injections use: all (the shipped default), or the training families only (measurements). @defaultValue 'all' */
  families?: 'all' | 'train';
  /** Most benign held-out checks blocked at the recalibrated point. @defaultValue 0.03 */
  targetFpr?: number;
  /** The base model directory. @defaultValue the embedded model */
  baseModel?: string;
  /** Fewest conversations with tool calls the traffic must hold. @defaultValue {@link MIN_ADAPT_CONVERSATIONS} (50) */
  minConversations?: number;
  /** Python with torch, onnx, numpy and regex. @defaultValue $EDGEARMOR_PYTHON, else /usr/bin/python3 when present, else python3 */
  python?: string;
  /**
   * How the training traffic is screened with the base guard: 'recalibrated' (default) at the base's
   * operating point recalibrated on the held-out traffic, 'default' at its shipped point (on an unseen
   * agent that can leave out half the calls), 'off' for traffic known to be attack-free.
   */
  screen?: 'recalibrated' | 'default' | 'off';
  /** Write the model even when it is worse than the base on the held-out traffic (the report still says so). */
  force?: boolean;
  /** Keep the work directory (the screened traffic, planted cases, the candidate) and say where. */
  keepWork?: boolean;
  /**
   * Training shape, for small models and tests: sequence length, batch tokens, held-out cases, generator
   * cases, `trainMinutes`, a training time shorter than what the budget leaves (never longer), `screenMinutes`, the
   * screening's time instead of what the scoring third leaves it (at most 20% of the budget), and `probeCases`, the generator test cases both guards
   * check for forgetting (30), and `interleave: false`, training after screening rather than beside it (on the CPU
   * it trains beside it, from the first screened conversation on).
   */
  training?: { maxLen?: number; batchTokens?: number; holdoutCases?: number; generatorCases?: number; trainMinutes?: number; screenMinutes?: number; probeCases?: number; interleave?: boolean };
  onProgress?: (event: AdaptProgress) => void;
  /**
   * Aborting before training starts stops the run (an AbortError, nothing written). Once training runs it stops
   * training (and screening beside it, after the conversation in flight), keeps the best step, and the run scores
   * and writes it as usual.
   */
  signal?: AbortSignal;
}

/** Progress of an adaptation, for a progress bar. */
export type AdaptProgress =
  | { stage: 'screen' | 'score'; done: number; total: number; minutesLeft: number }
  | { stage: 'train'; step: number; minutes: number; budgetMinutes: number; loss: number | null; minutesLeft: number }
  | { stage: 'python'; detail: string; minutesLeft: number }
  /** torch's measured matrix multiply speed; `warning` says when it is too slow to train in the budget, and the fix. */
  | { stage: 'machine'; matmulGflops: number; blas: string; device: ResolvedTrainingDevice; gpu: string | null; warning: string | null; minutesLeft: number };

/** A call the base guard blocked in the training traffic (no traffic text: line, call position, tool, reason). */
export interface ScreenedCall {
  line: number;
  conversation: string;
  messageIndex: number;
  callIndex: number;
  tool: string;
  reason: string;
}

/** adapt-report.json, printed as a table by the CLI. */
export interface AdaptReport {
  schema: 1;
  created: string;
  written: boolean;
  /** How the adapted model is worse than the base on the held-out traffic, or null; nothing is written then unless forced. */
  refusal: string | null;
  traffic: {
    file: string;
    conversations: number;
    withToolCalls: number;
    calls: number;
    formats: Partial<Record<TrafficFormat, number>>;
    trainConversations: number;
    holdoutConversations: number;
    /** The operating point the training traffic was screened at ('recalibrated': the base's on the held-out traffic). */
    screen: 'recalibrated' | 'default' | 'off';
    screenPoint: { userWeight: number; tau: number };
    /** Training conversations screened (every one with `screen: 'off'`) and used. */
    usedConversations: number;
    /** Training conversations never screened (the budget ran out): not used. */
    unscreenedConversations: number;
    /** Per stratum (the agent's tool set and its first call's tool: adapt/sampling.ts), the training conversations and how many screening reached. */
    screenedByStratum: Array<{ stratum: string; conversations: number; screened: number }>;
    /** Calls blocked at the screening point: never user-driven examples; their conversation is language-modelling data up to them. */
    blockedCalls: ScreenedCall[];
  };
  training: Record<string, unknown>;
  holdout: {
    /** Cases planted. */
    cases: number;
    /** Cases each guard scored within its share of the budget (the adapted guard scores only the base's); rates compare the two on the adapted guard's. */
    scored: { base: number; adapted: number };
    /** Why that many were planted (adapt/holdout.ts holdoutPlan) and the measured time a check that sized them. */
    plan: HoldoutPlan & { secondsPerCheck: number };
    injected: number;
    benign: number;
    realCalls: number;
    families: 'all' | 'train';
    /** The base model at its shipped operating point, the base recalibrated, the adapted model recalibrated. */
    base: OperatingPoint;
    baseRecalibrated: OperatingPoint;
    adapted: OperatingPoint;
    adaptedAtBaseOptions: OperatingPoint;
    /** Injected calls blocked by attacker value: one the traffic really uses, or a fresh one. */
    byAttackerValue: Record<string, { base: number; adapted: number; n: number }>;
    /** Verdicts whose replay at the guard's own options disagreed with the guard (0 unless the rule changed). */
    replayMismatches: number;
    /**
     * How well each model predicts the real held-out calls (log P(call | context) per action token, the least
     * of a check's windows; core/familiarity.ts): the base's count at its familiarityThreshold (most of them
     * below: an agent the base model did not know), each model's median, and the adapted model's threshold, which
     * its guard-options.json sets (calibratedFamiliarityThreshold: their 10% quantile; null from too few calls).
     */
    familiarity: { base: FamiliarityCount; baseMedian: number | null; adaptedMedian: number | null; adaptedThreshold: number | null };
  };
  generator: { cases: number; base: { tpr: number; fpr: number }; adapted: { tpr: number; fpr: number } } | null;
  /** The point the written model's guard-options.json sets (a signal no held-out check carried keeps the base's threshold). */
  chosen: OperatingThresholds & { targetFpr: number };
  /**
   * Where the budget went: torch's speed and the traffic (machine), planting the held-out cases (plant), the base's
   * held-out scoring (holdoutBase), screening, model/adapt.py's whole run (train: data, evaluations, training,
   * export), the adapted guard's held-out scoring and the probe (holdoutAdapted; score is both guards' scoring),
   * writing the model directory (write), and the total against the budget. On the CPU training runs beside
   * screening (`training.besideScreening`): `train` then counts from screening's start, and the stages sum to
   * more than the total.
   */
  minutes: { machine: number; plant: number; holdoutBase: number; screen: number; train: number; holdoutAdapted: number; score: number; write: number; total: number; budget: number };
  /** torch's matrix multiply speed on this machine, measured before training, and where training ran. */
  machine: TorchSpeed & { device: ResolvedTrainingDevice };
}
