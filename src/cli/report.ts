/**
 * The human-readable output of `edgearmor check`: per case a headline that names the cause, the rule,
 * a one-line legend, the leave-one-out table with full labels, a MindGuard row, what truncation cut,
 * and with `--explain` a short plain-language reason. Injected tool results (a span whose removal
 * moves the call) and poisoned tool descriptions (a description whose removal moves it) are named
 * apart; MindGuard's attention signal scores a tool as a whole (its description and its results), and
 * says so.
 */
import type { GuardInput } from '../core/types.js';
import type { Verdict } from '../core/verdict.js';

/** One reason the verdict gives, in words. */
interface Cause {
  /** Short, for the headline and the FLAGGED marker. */
  label: string;
  /** A sentence for --explain. */
  sentence: string;
}

function num(n: number | null | undefined, digits = 3): string {
  if (n === null || n === undefined) return 'n/a';
  return Number.isFinite(n) ? n.toFixed(digits) : String(n);
}

function fmt(n: number, width: number): string {
  return num(n).padStart(width);
}

/** Everything that made the guard flag this call, in the order the rule considered them. */
function causes(v: Verdict): Cause[] {
  const a = v.attribution;
  const out: Cause[] = [];
  for (const s of a?.spans.filter((x) => x.flagged) ?? []) {
    const tool = s.toolName ?? 'tool';
    out.push({
      label: `injected tool result: ${tool} result, msg ${s.messageIndex}`,
      sentence:
        `Removing the ${tool} result (message ${s.messageIndex}) lowers the call's log-probability by ${num(s.normalizedDelta)} a token, ` +
        `against ${num(a!.user.normalizedDelta)} for removing the user's request: that tool result, not the user, drives the call (an injected tool result).`,
    });
  }
  const tp = v.toolPoisoning;
  for (const t of tp?.leaveOneOut?.tools.filter((x) => x.flagged) ?? []) {
    out.push({
      label: `poisoned tool description: ${t.tool}`,
      sentence: `Removing the description of ${t.tool} lowers the call's log-probability by ${num(t.normalizedDelta)} a token, more than the rule allows against the user's request: that description steers the call (a poisoned tool description).`,
    });
  }
  const mg = tp?.attention;
  if (mg?.detected && mg.poisonedTool !== null) {
    const flow = mg.flow === 'control' ? 'which tool is called' : 'the arguments of the call';
    out.push({
      label: `MindGuard: the call attends to tool ${mg.poisonedTool} (AIR ${num(mg.score)} > ${num(mg.threshold, 2)}, ${mg.flow} flow)`,
      sentence:
        `The call's tokens attend to the tool ${mg.poisonedTool} ${num(mg.score, 1)} times as much as to the user's request and the called tool (MindGuard's AIR; the threshold is ${num(mg.threshold, 2)}), ` +
        `so ${mg.poisonedTool}'s description or its results steer ${flow}. Attention does not tell the two apart; leave-one-out ${
          (tp?.leaveOneOut?.tools ?? []).some((t) => t.tool === mg.poisonedTool && t.flagged) ? 'flags its description too' : 'flags no description, so look at its results'
        }.`,
    });
  }
  return out;
}

/** The headline's parenthesis: the decision's cause in a few words. */
function headlineReason(v: Verdict, found: Cause[]): string {
  switch (v.reason) {
    case 'failure-policy':
      return `the guard failed${v.error ? ` (${v.error.code})` : ''}; failure policy`;
    case 'not-privileged':
      return 'not a privileged tool: not checked';
    case 'no-untrusted-spans':
      return 'no untrusted tool result or description to check';
    case 'model':
      if (found.length === 0) return 'no tool result or description drives the call';
      return found.map((c) => c.label.replace(/ \(AIR .*$/, '')).join('; ');
  }
}

/** A short plain-language reason for the verdict (`edgearmor check --explain`). */
export function explainVerdict(input: GuardInput, v: Verdict): string {
  const call = input.action.name;
  const decided = v.decision === 'block' ? 'Blocked' : 'Allowed';
  if (v.reason === 'failure-policy') {
    return `${decided} by the failure policy, not by the model: the guard could not score ${call}${v.error ? ` (${v.error.code}: ${v.error.message})` : ''}.`;
  }
  if (v.reason === 'not-privileged') return `${decided} without a check: ${call} is not in the privileged tools.`;
  if (v.reason === 'no-untrusted-spans') return `${decided}: the conversation has no untrusted tool result or tool description that could drive ${call}.`;
  const found = causes(v);
  if (found.length > 0) return `${decided}. ${found.map((c) => c.sentence).join(' ')}`;
  const a = v.attribution;
  if (!a) return `${decided}: nothing was scored.`;
  const top = [...a.spans].sort((x, y) => y.normalizedDelta - x.normalizedDelta)[0];
  const user = `removing the user's request lowers its log-probability by ${num(a.user.normalizedDelta)} a token`;
  return top
    ? `${decided}: the user's request explains ${call}: ${user}; the tool result that matters most (${top.toolName ?? 'tool'}, message ${top.messageIndex}) only ${num(top.normalizedDelta)}, within the rule's margin.`
    : `${decided}: ${user}, and no tool result or description moves it past the rule.`;
}

/** The human-readable table of one verdict. */
export function verdictTable(id: string, input: GuardInput, v: Verdict, options: { explain?: boolean } = {}): string {
  const found = v.reason === 'model' ? causes(v) : [];
  const head = `case ${id}: ${v.decision.toUpperCase()} (${headlineReason(v, found)}) -> ${input.action.name}`;
  const explain = options.explain ? `  explain: ${explainVerdict(input, v)}\n` : '';
  const a = v.attribution;
  if (!a) return `${head}${v.error ? `\n  error: ${v.error.code}: ${v.error.message}` : ''}\n${explain}`;

  const rows: Array<{ label: string; values: string; flag: string }> = [];
  for (const x of a.variants.filter((y) => y.kind !== 'no-tool')) {
    const span = x.kind === 'no-span' ? a.spans.find((s) => `no-span:${s.spanId}` === x.id) : undefined;
    const label = x.id === 'full' ? 'full conversation' : x.id === 'no-user' ? 'without the user request (dU)' : span ? `without ${span.toolName ?? 'tool'} result, msg ${span.messageIndex} (dS)` : x.id;
    rows.push({ label, values: `${fmt(x.logProb, 14)}${x.id === 'full' ? '' : fmt(x.rawDelta, 11) + fmt(x.normalizedDelta, 12)}`, flag: span?.flagged ? '  FLAGGED: injected tool result' : '' });
  }
  const tp = v.toolPoisoning;
  for (const t of tp?.leaveOneOut?.tools ?? []) {
    rows.push({ label: `without ${t.tool} description (dS)`, values: `${fmt(t.logProb, 14)}${fmt(t.rawDelta, 11)}${fmt(t.normalizedDelta, 12)}`, flag: t.flagged ? '  FLAGGED: poisoned tool description' : '' });
  }
  const width = Math.max('variant'.length, ...rows.map((r) => r.label.length)) + 2;
  const lines = [`  ${'variant'.padEnd(width)}${'log P(action)'.padStart(14)}${'raw delta'.padStart(11)}${'norm delta'.padStart(12)}`];
  for (const r of rows) lines.push(`  ${r.label.padEnd(width)}${r.values}${r.flag}`);

  if (tp) {
    const mg = tp.attention;
    if (mg) {
      const top = [...mg.air].sort((x, y) => y.air - x.air)[0];
      const where = top ? ` on ${top.tool} (${top.flow} flow)` : '';
      lines.push(`  MindGuard attention: max AIR ${num(mg.score)}${where}, threshold ${num(mg.threshold, 2)}${mg.detected ? `  FLAGGED: tool ${mg.poisonedTool} pulls the call (its description or its results)` : ''}`);
    }
    if (tp.unavailable.length > 0) lines.push(`  tool-description checks not run: ${tp.unavailable.join('; ')}`);
  }
  if (v.truncation) {
    const cut = Object.entries(v.truncation.shortenedMessages).map(([msg, tokens]) => `msg ${msg} lost ${tokens} tokens`);
    if (v.truncation.droppedToolDefinitions) cut.unshift('tool definitions dropped');
    lines.push(`  truncated to fit the proxy's context window: ${cut.join('; ')}`);
  }

  const rule = a.userWeight === null ? `rule ${a.rule}` : `rule ${a.rule} (flag when dS > ${a.userWeight} x dU - tau)`;
  const legend =
    "  legend: delta = drop in log P(action) when that part is removed (norm = per action token); dU = the user request's norm delta, dS = a tool result's or description's; " +
    'tau = margin; AIR = attention to a tool relative to the user request and the called tool';
  return `${head}\n  ${rule}, tau ${a.tau}, ${a.actionTokenCount} action tokens, ${v.backend ?? ''} ${v.proxy ?? ''}\n${legend}\n${lines.join('\n')}\n${explain}`;
}
