/**
 * One verdict from the verdicts of a check's windows (core/windows.ts): a call is blocked when any
 * window blocks it; every span, group and description keeps the evidence of the window that judged it,
 * renumbered to the check's own message indexes and span ids; the verdict says how many windows were
 * scored, what each judged and what none did.
 */
import type { AttributionResult, GroupAttribution, SpanAttribution } from './attribution.js';
import type { StructuredContext } from './context.js';
import { ContextTooLongError } from './errors.js';
import { judgeFailure } from './judge.js';
import type { MindGuardVerdict } from './mindguard/types.js';
import { nameStrongParts } from './named-parts.js';
import type { ResolvedGuardOptions } from './options.js';
import { combineToolPoisoning, type ToolDescriptionAttribution, type ToolPoisoningVerdict } from './tool-poisoning.js';
import type { TruncationReport, Verdict, VerdictExtras, WindowsReport } from './verdict.js';
import type { CheckWindow } from './windows.js';

/**
 * The options each window of a check judged in several windows is judged with: MindGuard's AIR thresholds
 * raised to `toolPoisoning.windowedAirThreshold`. A benign call gets one chance per window to cross them;
 * at the usual thresholds MindGuard alone blocked 58% of ASB's and 18% of the MCP set's benign windowed calls
 * (choice halves), at 3 at most 5% (docs/evaluation.md).
 */
export function windowedJudgeOptions(options: ResolvedGuardOptions): ResolvedGuardOptions {
  const tp = options.toolPoisoning;
  const raise = (air: number) => Math.max(air, tp.windowedAirThreshold);
  return {
    ...options,
    toolPoisoning: {
      ...tp,
      mindguard: { ...tp.mindguard, airThreshold: raise(tp.mindguard.airThreshold) },
      beforeToolResults: { ...tp.beforeToolResults, airThreshold: raise(tp.beforeToolResults.airThreshold) },
    },
  };
}

/** One scored window and its verdict. */
export interface JudgedWindow {
  win: CheckWindow;
  verdict: Verdict;
  /** Forward passes its scoring took (its variants). */
  passes: number;
}

function remapRecord(record: Record<number, number> | undefined, indexes: readonly number[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const [k, v] of Object.entries(record ?? {})) out[indexes[Number(k)]!] = (out[indexes[Number(k)]!] ?? 0) + v;
  return out;
}

/** The windows' cuts in the check's numbering, with every text cut before tokenizing, judged or not. */
function mergeTruncation(judged: readonly JudgedWindow[], cutChars: Readonly<Record<number, number>>): TruncationReport | undefined {
  const reports = judged.filter((j) => j.verdict.truncation !== undefined);
  const cutBeforeTokenizing = Object.keys(cutChars).length > 0;
  if (reports.length === 0 && !cutBeforeTokenizing) return undefined;
  const out: TruncationReport = { droppedToolDefinitions: false, shortenedMessages: {} };
  if (cutBeforeTokenizing) out.charsCutBeforeTokenizing = { ...cutChars };
  for (const { win, verdict } of reports) {
    const t = verdict.truncation!;
    out.droppedToolDefinitions ||= t.droppedToolDefinitions;
    Object.assign(out.shortenedMessages, remapRecord(t.shortenedMessages, win.messageIndexes));
    if (t.charsCutBeforeTokenizing) out.charsCutBeforeTokenizing = { ...out.charsCutBeforeTokenizing, ...remapRecord(t.charsCutBeforeTokenizing, win.messageIndexes) };
    if (t.keptCallSentences) out.keptCallSentences = { ...out.keptCallSentences, ...remapRecord(t.keptCallSentences, win.messageIndexes) };
  }
  return out;
}

/** A window's attribution in the check's numbering; variant ids of windows after the first carry `w<n>/`. */
function remapAttribution(a: AttributionResult, { win }: JudgedWindow, n: number): AttributionResult {
  const message = (i: number) => win.messageIndexes[i]!;
  const span = (id: number) => win.spanIds[id]!;
  const spans: SpanAttribution[] = a.spans.map((s) => ({ ...s, spanId: span(s.spanId), messageIndex: message(s.messageIndex), userDeltas: a.user.deltas }));
  const groups: GroupAttribution[] = a.groups.map((g) => ({ ...g, spanIds: g.spanIds.map(span), messageIndexes: g.messageIndexes.map(message) }));
  return {
    ...a,
    spans,
    groups,
    flagged: a.flagged.map((f) => ({ ...f, spanId: span(f.spanId), messageIndex: message(f.messageIndex) })),
    variants: n === 0 ? a.variants : a.variants.map((v) => ({ ...v, id: `w${n + 1}/${v.id}` as typeof v.id })),
  };
}

/** The descriptions' evidence from every window (the called tool's, present in each, from the window where it scores highest) and MindGuard's strongest window. */
function mergeToolPoisoning(verdicts: readonly Verdict[], invokedTool: string): ToolPoisoningVerdict | undefined {
  const parts = verdicts.flatMap((v) => (v.toolPoisoning ? [v.toolPoisoning] : []));
  if (parts.length === 0) return undefined;
  const byTool = new Map<string, ToolDescriptionAttribution>();
  let anyLoo = false;
  for (const p of parts) {
    if (!p.leaveOneOut) continue;
    anyLoo = true;
    for (const t of p.leaveOneOut.tools) {
      const seen = byTool.get(t.tool);
      if (seen === undefined || t.score > seen.score) byTool.set(t.tool, t);
    }
  }
  const attentions = parts.flatMap((p): MindGuardVerdict[] => (p.attention ? [p.attention] : []));
  const strongest = (xs: MindGuardVerdict[]) => xs.reduce<MindGuardVerdict | null>((best, a) => (best === null || a.score - a.threshold > best.score - best.threshold ? a : best), null);
  const attention = strongest(attentions.filter((a) => a.detected)) ?? strongest(attentions);
  const unavailable = [...new Set(parts.flatMap((p) => p.unavailable))];
  return combineToolPoisoning(anyLoo ? [...byTool.values()] : null, attention, invokedTool, unavailable);
}

/**
 * The check's verdict from its windows' verdicts. `notJudged` lists what no window scored (the passes
 * ran out): under truncatedSpans 'fail' that is the failure policy, under 'report' the verdict lists it.
 * `cutChars` (the check's numbering) is what was cut before tokenizing: reported whether or not a window
 * judged the message.
 */
export function mergeWindowVerdicts(
  context: StructuredContext,
  judged: readonly JudgedWindow[],
  notJudged: WindowsReport['notJudged'],
  options: ResolvedGuardOptions,
  extras: VerdictExtras = {},
  cutChars: Readonly<Record<number, number>> = {},
): Verdict {
  const windows: WindowsReport = {
    count: judged.length,
    passes: judged.reduce((a, j) => a + j.passes, 0),
    judged: judged.map(({ win }) => ({
      messages: win.messageIndexes.filter((i) => context.messages[i]!.role === 'tool'),
      tools: win.context.tools.map((t) => t.name),
      cutDescriptions: Object.keys(win.plan.toolShares ?? {}).map((i) => context.tools[Number(i)]!.name),
    })),
    notJudged,
  };
  const truncation = mergeTruncation(judged, cutChars);
  const failed = judged.find((j) => j.verdict.reason === 'failure-policy');
  const missing = notJudged.messages.length + notJudged.tools.length > 0;
  const cutDescriptions = [...new Set(windows.judged.flatMap((j) => j.cutDescriptions))];
  if (failed || ((missing || cutDescriptions.length > 0) && options.truncatedSpans === 'fail')) {
    const error = failed
      ? failed.verdict.error
      : new ContextTooLongError(
          `${[
            ...(missing ? [`the check needs more than maxPasses (${options.maxPasses}) passes to judge every part in windows (not judged: ${describe(notJudged)})`] : []),
            ...(cutDescriptions.length > 0 ? [`tool descriptions longer than a window were cut to fit it (${cutDescriptions.join(', ')})`] : []),
          ].join(' and ')}, and truncatedSpans is 'fail'`,
          { messages: notJudged.messages, tools: notJudged.tools, cutDescriptions },
        );
    return { ...judgeFailure(error, context, options, extras), windows, ...(truncation ? { truncation } : {}) };
  }
  const attributions = judged.map((j, n) => remapAttribution(j.verdict.attribution!, j, n));
  const first = attributions[0]!;
  const scores = judged.map((j) => j.verdict.score).filter((s): s is number => s !== null);
  const flagged = attributions.flatMap((a) => a.flagged).sort((a, b) => a.spanId - b.spanId);
  const attribution: AttributionResult = {
    ...first,
    spans: attributions.flatMap((a) => a.spans).sort((a, b) => a.spanId - b.spanId),
    groups: attributions.flatMap((a) => a.groups),
    variants: attributions.flatMap((a) => a.variants),
    flagged,
    detected: flagged.length > 0,
    score: scores.length > 0 ? Math.max(...scores) : null,
  };
  const toolPoisoning = mergeToolPoisoning(judged.map((j) => j.verdict), context.action.name);
  const detected = judged.some((j) => j.verdict.detected);
  const verdict: Verdict = {
    ...judged[0]!.verdict,
    detected,
    decision: judged.some((j) => j.verdict.decision === 'block') ? 'block' : 'allow',
    attribution,
    flagged,
    score: attribution.score,
    windows,
    ...(toolPoisoning ? { toolPoisoning } : {}),
  };
  if (truncation) verdict.truncation = truncation;
  else delete verdict.truncation;
  if (missing) verdict.message = `Scored in ${judged.length} windows; not judged (maxPasses ${options.maxPasses} reached): ${describe(notJudged)}.`;
  // Each window named its parts against its own strongest; the check names them against the strongest of all.
  return nameStrongParts(verdict, options.relativeFloor, context.action.name);
}

function describe(parts: WindowsReport['notJudged']): string {
  const items = [...parts.messages.map((i) => `tool result ${i}`), ...parts.tools.map((t) => `the description of ${t}`)];
  return items.join(', ');
}
