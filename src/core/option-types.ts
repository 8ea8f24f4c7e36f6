/** The guard's options as callers give them (`GuardOptions`) and after defaults and validation (`ResolvedGuardOptions`). */
import type { MindGuardOptions, ResolvedMindGuardOptions } from './mindguard/options.js';

/** Which detection rule turns deltas into flagged spans. */
export type DetectionRuleName = 'causalarmor' | 'edgearmor';

/** Which user messages form the user request U that is ablated. */
export type UserRequestMode = 'all' | 'last';

/** How the proposed action is rendered for scoring. */
export type ActionTextMode = 'template' | 'raw';

/** What the guard decides for a privileged call when it cannot produce a verdict. */
export type FailurePolicy = 'block' | 'allow';

/** Parameters of the 'edgearmor' rule, which scores tool-name and argument tokens separately. */
export interface EdgeArmorRuleOptions {
  /**
   * Weight of the tool-name part of the comparison (dS_name - dU_name).
   * @defaultValue 1
   */
  nameWeight?: number | undefined;
  /**
   * Weight of the argument part of the comparison (dS_args - dU_args); lower than the name weight because benign calls copy argument values from tool results.
   * @defaultValue 0.5
   */
  argumentsWeight?: number | undefined;
  /**
   * Floor applied to every user delta before comparison, so a negative dU cannot make any positive span delta look dominant.
   * @defaultValue 0
   */
  userFloor?: number | undefined;
}

/** Options of the defense pipeline (sanitise, mask, regenerate, re-check). */
export interface DefenseOptions {
  /**
   * How many times the agent is asked for a new call after a detection; 0 blocks at once.
   * @defaultValue 2
   */
  maxRegenerations?: number | undefined;
  /**
   * Whether flagged spans are sanitised before regeneration.
   * @defaultValue true
   */
  sanitize?: boolean | undefined;
  /**
   * Whether assistant text after the earliest flagged span is redacted before regeneration.
   * @defaultValue true
   */
  maskReasoning?: boolean | undefined;
  /**
   * Text that replaces each redacted sentence of a flagged span.
   * @defaultValue '[Removed: instructions in a tool result]'
   */
  redactionText?: string | undefined;
  /**
   * Text that replaces a whole flagged span when sanitisation is on but no sanitizer is available or it failed.
   * @defaultValue '[Tool result withheld: it was flagged as a prompt injection]'
   */
  withheldText?: string | undefined;
  /**
   * Minimum normalised leave-one-out delta for a sentence of a flagged span to be redacted.
   * @defaultValue 0
   */
  sentenceDeltaThreshold?: number | undefined;
  /**
   * Most sentences redacted per span; null means no limit.
   * @defaultValue null
   */
  maxRedactedSentences?: number | null | undefined;
}

/** Options of the tool-poisoning signals (MindGuard attention and leave-one-out over tool descriptions). */
export interface ToolPoisoningOptions {
  /**
   * Score the action without each registered tool's description (one more variant per tool, in the same batch).
   * @defaultValue true
   */
  leaveOneOut?: boolean | undefined;
  /**
   * Extra margin a tool description's normalised delta must clear over the user's (dT - dU > margin - tau).
   * With the default tau (-0.1), -0.05 flags a description when dT - dU > 0.05: 95% of the generator
   * validation split's poisoned calls at 1.4% false positives with the embedded model (none on AgentDojo
   * guard cases cut from held-out training runs; measured 2026-11-23).
   * @defaultValue -0.05
   */
  leaveOneOutMargin?: number | undefined;
  /**
   * Read the proxy's attention rows from the full-context pass and build MindGuard's decision-dependence graph.
   * @defaultValue true
   */
  attention?: boolean | undefined;
  /**
   * MindGuard's own options (sigma, head pooling, sink filter, AIR threshold); see core/mindguard/options.ts.
   * @defaultValue {}
   */
  mindguard?: MindGuardOptions | undefined;
  /**
   * The two thresholds for calls made before any tool result (an agent's first calls), where only tool
   * poisoning can drive a call. Each signal alone flags at most 2.5% of the generator validation split's
   * clean first calls with the embedded model at the default tau (the margin, like leaveOneOutMargin, is
   * relative to tau), together 4.7% (`npx tsx eval/calibrate-first-calls.ts`,
   * measured 2026-11-23; 7.5% of the test split's). How much first-call poisoning they catch is not
   * measured: the generator has no such conversations yet.
   * @defaultValue { airThreshold: 0.81, leaveOneOutMargin: 0.26 }
   */
  beforeToolResults?: { airThreshold?: number | undefined; leaveOneOutMargin?: number | undefined } | undefined;
}

/** User options of the guard; every field is optional. */
export interface GuardOptions {
  /**
   * Margin of the detection rule: span i is flagged iff dS_i > userWeight x dU - tau (strict, per the seeds).
   * The seeds' default, 0, flags the most; -0.1 is the embedded model's calibrated operating point: the best
   * mean of (TPR - FPR) over the generator's validation split and AgentDojo guard cases cut from held-out
   * training runs (0.80 vs 0.74 at 0, where 30% of those real agents' benign calls are blocked; measured
   * 2026-11-23, README "The detection rule"). Tool descriptions' margins are relative to it as well.
   * @defaultValue -0.1
   */
  tau?: number | undefined;
  /**
   * Weight of the user request's delta in the 'causalarmor' rule: span i is flagged iff dS_i > userWeight x dU - tau.
   * 1 is the seeds' rule. 2 ranks injected above benign calls better on the generator's validation split and on
   * AgentDojo guard cases cut from held-out training runs (mean ROC-AUC 0.937 vs 0.930 with the model it was
   * chosen for; with the current one 2 and 3 are equal, see README "The detection rule"). Tool-result spans
   * only: tool descriptions keep the seeds' weighting.
   * @defaultValue 2
   */
  userWeight?: number | undefined;
  /**
   * Detection rule: 'causalarmor' is the seeds' rule on whole-action deltas; 'edgearmor' compares tool-name and argument deltas separately with a floor on dU.
   * @defaultValue 'causalarmor'
   */
  rule?: DetectionRuleName | undefined;
  /**
   * Parameters of the 'edgearmor' rule.
   * @defaultValue { nameWeight: 1, argumentsWeight: 0.5, userFloor: 0 }
   */
  edgearmorRule?: EdgeArmorRuleOptions | undefined;
  /**
   * 'all' ablates every user message together (agents repeat the user prompt after tool results); 'last' ablates only the last one, as the reference does.
   * @defaultValue 'all'
   */
  userRequest?: UserRequestMode | undefined;
  /**
   * When given, exactly these tools' results are untrusted; cannot be combined with trustedTools.
   * @defaultValue undefined (every tool result is untrusted)
   */
  untrustedTools?: string[] | undefined;
  /**
   * Tools whose results are trusted; every other tool result stays untrusted.
   * @defaultValue undefined (no tool is trusted)
   */
  trustedTools?: string[] | undefined;
  /**
   * Tools whose calls are checked; other calls are allowed with reason 'not-privileged'.
   * @defaultValue undefined (every call is checked)
   */
  privilegedTools?: string[] | undefined;
  /**
   * Redact assistant text after the first untrusted span before scoring (cot-propagation seed).
   * @defaultValue true
   */
  maskCotForScoring?: boolean | undefined;
  /**
   * Text that replaces redacted assistant reasoning.
   * @defaultValue '[Reasoning redacted]'
   */
  cotRedactionText?: string | undefined;
  /**
   * 'template' renders the action as a tool-call message in the proxy's chat template; 'raw' scores the agent's raw_text verbatim.
   * @defaultValue 'template'
   */
  actionText?: ActionTextMode | undefined;
  /**
   * Decision for a privileged call when the guard fails.
   * @defaultValue 'block'
   */
  onError?: FailurePolicy | undefined;
  /**
   * Time limit of one check in milliseconds.
   * @defaultValue 30000
   */
  timeoutMs?: number | undefined;
  /**
   * Most context tokens per scored variant; null means the model's own window.
   * @defaultValue null
   */
  maxContextTokens?: number | null | undefined;
  /**
   * A check whose untrusted span (a tool result) had to be cut to fit the window: 'report' keeps the model's
   * verdict and lists the cut in `verdict.truncation`; 'fail' treats it as a guard failure (a
   * `ContextTooLongError` answered by `onError`: block a privileged call by default), since the cut part may
   * have held the injection. docs/security-model.md says why 'report' is the default.
   * @defaultValue 'report'
   */
  truncatedSpans?: TruncatedSpanPolicy | undefined;
  /**
   * Also remove groups of untrusted spans together: near-duplicate results, all results of one tool, and
   * every untrusted span at once. An injection repeated in two results, or a call that no single result
   * explains, moves the call only when the whole group goes. false keeps the seeds' one-span-at-a-time
   * rule alone (docs/security-model.md).
   * @defaultValue true
   */
  groupAblation?: boolean | undefined;
  /**
   * What a group needs beyond a single span: a group is flagged iff the rule flags it with tau - groupMargin.
   * @defaultValue 0
   */
  groupMargin?: number | undefined;
  /**
   * Defense pipeline options.
   * @defaultValue see DEFAULT_DEFENSE_OPTIONS
   */
  defense?: DefenseOptions | undefined;
  /**
   * Tool-poisoning signals, used when the input lists its tools.
   * @defaultValue { leaveOneOut: true, leaveOneOutMargin: -0.05, attention: true, mindguard: {} }
   */
  toolPoisoning?: ToolPoisoningOptions | undefined;
}

/** Defense options after defaults. */
export interface ResolvedDefenseOptions {
  maxRegenerations: number;
  sanitize: boolean;
  maskReasoning: boolean;
  redactionText: string;
  withheldText: string;
  sentenceDeltaThreshold: number;
  maxRedactedSentences: number | null;
}

/** 'edgearmor' rule parameters after defaults. */
export interface ResolvedEdgeArmorRuleOptions {
  nameWeight: number;
  argumentsWeight: number;
  userFloor: number;
}

/** What a check whose untrusted span was cut to fit the window answers (GuardOptions.truncatedSpans). */
export type TruncatedSpanPolicy = 'report' | 'fail';

/** Guard options after defaults and validation: plain data that survives structuredClone. */
export interface ResolvedGuardOptions {
  tau: number;
  userWeight: number;
  rule: DetectionRuleName;
  edgearmorRule: ResolvedEdgeArmorRuleOptions;
  userRequest: UserRequestMode;
  untrustedTools: string[] | null;
  trustedTools: string[] | null;
  privilegedTools: string[] | null;
  maskCotForScoring: boolean;
  cotRedactionText: string;
  actionText: ActionTextMode;
  onError: FailurePolicy;
  timeoutMs: number;
  maxContextTokens: number | null;
  truncatedSpans: TruncatedSpanPolicy;
  groupAblation: boolean;
  groupMargin: number;
  defense: ResolvedDefenseOptions;
  toolPoisoning: ResolvedToolPoisoningOptions;
}

/** Tool-poisoning options after defaults and validation. */
export interface ResolvedToolPoisoningOptions {
  leaveOneOut: boolean;
  leaveOneOutMargin: number;
  attention: boolean;
  mindguard: ResolvedMindGuardOptions;
  beforeToolResults: { airThreshold: number; leaveOneOutMargin: number };
}
