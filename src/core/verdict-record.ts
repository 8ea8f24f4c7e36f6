/**
 * The verdict as one flat, versioned JSON record: what `edgearmor check --json` prints (docs/verdict.md "The
 * --json record"), typed here so a reader in TypeScript gets its fields, and checked against
 * docs/verdict.md's table by test/unit/verdict-record.test.ts.
 */
import type { ErrorCode } from './errors.js';
import { callLogProbPerToken } from './familiarity.js';
import type { DefinitionFinding } from './mcp-definitions/types.js';
import type { ToolPoisoningVerdict } from './tool-poisoning.js';
import type { Verdict } from './verdict.js';

/** The --json record's schema version (docs/verdict.md "The --json record"): new fields keep it, a changed or removed field bumps it. */
export const VERDICT_RECORD_SCHEMA_VERSION = 1;

/** The --json record of one verdict (schema version 1). */
export interface VerdictRecord {
  schema_version: number;
  id: string;
  detected: boolean;
  decision: Verdict['decision'];
  reason: Verdict['reason'];
  score: number | null;
  flagged: Array<{ message_index: number; tool_name: string | null; group?: number }>;
  delta_user: number | null;
  /** `delta_call_sentences`: a long result's sentences naming the call removed alone (present only where they were scored). */
  delta_spans: Array<{ message_index: number; tool_name: string | null; delta: number; raw_delta: number; flagged: boolean; delta_call_sentences?: number }>;
  delta_groups: Array<{ group: number; message_indexes: number[]; reasons: string[]; baseline: string; delta: number; raw_delta: number; delta_user: number; flagged: boolean }>;
  group_margin: number | null;
  log_probs: Record<string, number>;
  action_tokens: number | null;
  /** log P(call | whole context) per action token, the least of the check's windows (core/familiarity.ts). */
  call_log_prob_per_token: number | null;
  /** The unlikely-tool rule (`unlikelyToolThreshold`), or null when it did not run. */
  unlikely_tool: { log_prob_per_token: number; threshold: number; flagged: boolean } | null;
  rule: string | null;
  tau: number | null;
  user_weight: number | null;
  mindguard: {
    detected: boolean;
    source_tool: string | null;
    flow: string | null;
    air: number | null;
    score: number | null;
    leave_one_out: Array<{ tool: string; delta: number; flagged: boolean }> | null;
    attention_detected: boolean | null;
    unavailable: string[];
  } | null;
  truncation: {
    dropped_tool_definitions: boolean;
    shortened_messages: Array<{ message_index: number; tokens_removed: number }>;
    chars_cut_before_tokenizing: Array<{ message_index: number; chars_removed: number }>;
    kept_call_sentences: Array<{ message_index: number; sentences: number }>;
  } | null;
  windows: {
    count: number;
    passes: number;
    judged: Array<{ messages: number[]; tools: string[]; cut_descriptions: string[] }>;
    not_judged: { messages: number[]; tools: string[] };
  } | null;
  backend: string | null;
  proxy: string | null;
  /** How the check was rendered for the proxy ('edgearmor', 'model-template', 'custom-template' or a shipped family rendering), or null. */
  rendering: string | null;
  timings: Record<string, number>;
  error?: { name: string; code: ErrorCode; message: string; details: Record<string, unknown> };
  /** The input's tool-definition findings (pins, collisions, shadowing, hidden text, schema anomalies), present only when it carried any; `decides` marks those whose policy blocked the call. */
  tool_definitions?: DefinitionFinding[];
}

/** The --json record of one verdict. */
export function verdictRecord(id: string, v: Verdict): VerdictRecord {
  const a = v.attribution;
  return {
    schema_version: VERDICT_RECORD_SCHEMA_VERSION,
    id,
    detected: v.detected,
    decision: v.decision,
    reason: v.reason,
    score: v.score,
    flagged: v.flagged.map((f) => ({ message_index: f.messageIndex, tool_name: f.toolName, ...(f.groupId !== undefined ? { group: f.groupId } : {}) })),
    delta_user: a?.user.normalizedDelta ?? null,
    delta_spans:
      a?.spans.map((s) => ({
        message_index: s.messageIndex,
        tool_name: s.toolName,
        delta: s.normalizedDelta,
        raw_delta: s.rawDelta,
        flagged: s.flagged,
        ...(s.callSentences ? { delta_call_sentences: s.callSentences.normalizedDelta } : {}),
      })) ?? [],
    delta_groups:
      a?.groups.map((g) => ({
        group: g.groupId,
        message_indexes: g.messageIndexes,
        reasons: g.reasons,
        baseline: g.baseline,
        delta: g.normalizedDelta,
        raw_delta: g.rawDelta,
        delta_user: g.userDeltas.whole,
        flagged: g.flagged,
      })) ?? [],
    group_margin: a?.groupMargin ?? null,
    log_probs: a ? Object.fromEntries(a.variants.map((x) => [x.id, x.logProb])) : {},
    action_tokens: a?.actionTokenCount ?? null,
    call_log_prob_per_token: callLogProbPerToken(a),
    unlikely_tool: v.unlikelyTool ? { log_prob_per_token: v.unlikelyTool.logProbPerToken, threshold: v.unlikelyTool.threshold, flagged: v.unlikelyTool.flagged } : null,
    rule: a?.rule ?? null,
    tau: a?.tau ?? null,
    user_weight: a?.userWeight ?? null,
    mindguard: v.toolPoisoning ? toolPoisoningRecord(v.toolPoisoning) : null,
    truncation: v.truncation
      ? {
          dropped_tool_definitions: v.truncation.droppedToolDefinitions,
          shortened_messages: Object.entries(v.truncation.shortenedMessages).map(([index, tokens]) => ({ message_index: Number(index), tokens_removed: tokens })),
          chars_cut_before_tokenizing: Object.entries(v.truncation.charsCutBeforeTokenizing ?? {}).map(([index, chars]) => ({ message_index: Number(index), chars_removed: chars })),
          kept_call_sentences: Object.entries(v.truncation.keptCallSentences ?? {}).map(([index, sentences]) => ({ message_index: Number(index), sentences })),
        }
      : null,
    windows: v.windows
      ? {
          count: v.windows.count,
          passes: v.windows.passes,
          judged: v.windows.judged.map((j) => ({ messages: j.messages, tools: j.tools, cut_descriptions: j.cutDescriptions })),
          not_judged: v.windows.notJudged,
        }
      : null,
    backend: v.backend ?? null,
    proxy: v.proxy ?? null,
    rendering: v.rendering ?? null,
    timings: v.timings,
    ...(v.error ? { error: v.error } : {}),
    ...(v.toolDefinitions && v.toolDefinitions.length > 0 ? { tool_definitions: v.toolDefinitions } : {}),
  };
}

/** JSON has no Infinity: an AIR with a zero denominator is written as this cap. */
const AIR_JSON_CAP = 1e9;

function finite(n: number | null): number | null {
  return n === null ? null : Number.isFinite(n) ? n : Math.sign(n) * AIR_JSON_CAP;
}

function toolPoisoningRecord(tp: ToolPoisoningVerdict): VerdictRecord['mindguard'] & object {
  return {
    detected: tp.detected,
    source_tool: tp.sourceTool,
    flow: tp.flow,
    air: finite(tp.air),
    score: finite(tp.score),
    leave_one_out: tp.leaveOneOut?.tools.map((t) => ({ tool: t.tool, delta: t.normalizedDelta, flagged: t.flagged })) ?? null,
    attention_detected: tp.attention?.detected ?? null,
    unavailable: tp.unavailable,
  };
}

