import { serializeError, type WireError } from './errors.js';
import type { AttributionResult, FlaggedSpan } from './attribution.js';
import type { ToolPoisoningVerdict } from './tool-poisoning.js';
import type { ResolvedGuardOptions } from './options.js';
import type { DefinitionFinding } from './mcp-definitions/types.js';

/** Whether the proposed call may run. */
export type Decision = 'allow' | 'block';

/** Why the decision was taken. */
export type DecisionReason = 'model' | 'failure-policy' | 'not-privileged' | 'no-untrusted-spans' | 'tool-definition';

/** The guard's answer for one proposed call: what the model found (`detected`) kept apart from what to do (`decision`). */
export interface Verdict {
  /** Whether attribution flagged at least one span. */
  detected: boolean;
  decision: Decision;
  reason: DecisionReason;
  /** Every log-prob and delta, or null when no attribution ran. */
  attribution: AttributionResult | null;
  flagged: FlaggedSpan[];
  /** Continuous case score (max over spans of the rule's score), or null when no attribution ran. */
  score: number | null;
  /** Durations in milliseconds by stage name. */
  timings: Record<string, number>;
  /** Inference backend that produced the scores (e.g. 'webgpu', 'wasm', 'cpu'). */
  backend?: string;
  /** Proxy model that produced the scores. */
  proxy?: string;
  /** How the check was rendered for the proxy: 'edgearmor', 'model-template', 'custom-template' or a shipped family rendering such as 'gemma3-tools'. */
  rendering?: string;
  /** The failure, when reason is 'failure-policy'. */
  error?: WireError;
  /** A human-readable explanation, when there is one worth showing. */
  message?: string;
  /** What the context-window truncation policy cut before scoring, when it had to cut anything. */
  truncation?: TruncationReport;
  /** Tool-description poisoning evidence (leave-one-out over descriptions and MindGuard), when the input lists tools. */
  toolPoisoning?: ToolPoisoningVerdict;
  /** How a check too long for the proxy's window was scored in several windows (core/windows.ts); absent when it fit one. */
  windows?: WindowsReport;
  /** The input's tool-definition findings (pins, collisions, shadowing, hidden text, schema anomalies), when it carried any; reason 'tool-definition' when their policy blocked the call. */
  toolDefinitions?: DefinitionFinding[];
  /** The unlikely-tool rule, when `unlikelyToolThreshold` is set and the model scored the call: flagged (and blocked) when the proxy expected the call's tool less than the threshold. */
  unlikelyTool?: UnlikelyTool;
}

/** How much the proxy expected the call's tool, against the model's `unlikelyToolThreshold`. */
export interface UnlikelyTool {
  /** log P(the tool's name | whole context) per token of the name, the least over the check's windows. */
  logProbPerToken: number;
  threshold: number;
  /** logProbPerToken < threshold. */
  flagged: boolean;
}

/** What each window of a windowed check judged, and what none did. */
export interface WindowsReport {
  /** Windows scored. */
  count: number;
  /** Forward passes (scored variants) over all windows. */
  passes: number;
  /**
   * Per window: the tool results (message indexes) and the tool descriptions it held and judged, and the
   * descriptions cut to fit it (longer than a window: head, tail and the sentences naming the call kept).
   */
  judged: Array<{ messages: number[]; tools: string[]; cutDescriptions: string[] }>;
  /** What no window judged because the passes ran out (the maxPasses option). */
  notJudged: { messages: number[]; tools: string[] };
}

/** What was cut to fit the model's context window. */
export interface TruncationReport {
  droppedToolDefinitions: boolean;
  /** Message index -> tokens removed from it. */
  shortenedMessages: Record<number, number>;
  /** Message index -> UTF-16 code units removed from its middle before tokenizing: more text than the window could ever hold. */
  charsCutBeforeTokenizing?: Record<number, number>;
  /** Message index -> sentences kept through the cut because they name the proposed call (sentence-cut.ts). */
  keptCallSentences?: Record<number, number>;
}

/** Extra data attached to a verdict. */
export interface VerdictExtras {
  timings?: Record<string, number>;
  backend?: string;
  proxy?: string;
  rendering?: string;
}

function withExtras(verdict: Verdict, extras: VerdictExtras): Verdict {
  if (extras.backend !== undefined) verdict.backend = extras.backend;
  if (extras.proxy !== undefined) verdict.proxy = extras.proxy;
  if (extras.rendering !== undefined) verdict.rendering = extras.rendering;
  return verdict;
}

/** The verdict of a completed attribution: block iff a span was flagged. */
export function modelVerdict(attribution: AttributionResult, extras: VerdictExtras = {}): Verdict {
  return withExtras(
    {
      detected: attribution.detected,
      decision: attribution.detected ? 'block' : 'allow',
      reason: 'model',
      attribution,
      flagged: attribution.flagged,
      score: attribution.score,
      timings: { ...(extras.timings ?? {}) },
    },
    extras,
  );
}

/** The verdict for a call whose tool is not in privilegedTools: allowed without scoring. */
export function notPrivilegedVerdict(toolName: string, extras: VerdictExtras = {}): Verdict {
  return withExtras(
    {
      detected: false,
      decision: 'allow',
      reason: 'not-privileged',
      attribution: null,
      flagged: [],
      score: null,
      timings: { ...(extras.timings ?? {}) },
      message: `"${toolName}" is not a privileged tool, so the call was not checked.`,
    },
    extras,
  );
}

/** The verdict when the context holds no untrusted span: nothing can have injected the call. */
export function noUntrustedSpansVerdict(extras: VerdictExtras = {}): Verdict {
  return withExtras(
    {
      detected: false,
      decision: 'allow',
      reason: 'no-untrusted-spans',
      attribution: null,
      flagged: [],
      score: null,
      timings: { ...(extras.timings ?? {}) },
      message: 'The context holds no untrusted tool result, so no span can have driven the call.',
    },
    extras,
  );
}

/** The verdict when the guard failed: a privileged call gets the onError decision (block by default), a non-privileged one is allowed. */
export function failureVerdict(error: unknown, options: Pick<ResolvedGuardOptions, 'onError'>, privileged: boolean, extras: VerdictExtras = {}): Verdict {
  const wire = serializeError(error);
  const decision: Decision = privileged ? options.onError : 'allow';
  return withExtras(
    {
      detected: false,
      decision,
      reason: 'failure-policy',
      attribution: null,
      flagged: [],
      score: null,
      timings: { ...(extras.timings ?? {}) },
      error: wire,
      message: `The guard failed (${wire.code}: ${wire.message}); failure policy ${privileged ? `onError="${options.onError}"` : 'for a non-privileged call'} -> ${decision}.`,
    },
    extras,
  );
}
