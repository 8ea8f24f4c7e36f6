/**
 * The human-readable output of `edgearmor check`: per case a headline that names the cause, the rule,
 * a one-line legend, the leave-one-out table with full labels, a MindGuard row, what truncation cut,
 * and with `--explain` a short plain-language reason. Injected tool results (a span whose removal
 * moves the call) and poisoned tool descriptions (a description whose removal moves it) are named
 * apart; MindGuard's attention signal scores a tool as a whole (its description and its results), and
 * says so.
 */
import { flaggedByCallSentences } from '../core/attribution.js';
import { explainVerdict, verdictFindings, verdictHeadline } from '../core/explain.js';
import { messageRef, messageRefs } from '../core/message-ref.js';
import type { DefinitionFinding } from '../core/mcp-definitions/types.js';
import type { ModelOptionsStatus } from '../core/model-options.js';
import type { GuardInput } from '../core/types.js';
import type { Verdict } from '../core/verdict.js';
import { MIN_ADAPT_CONVERSATIONS } from '../adapt/types.js';

export { explainVerdict };

/** One line saying which of a model directory's own options apply and which the caller's options overrode. */
export function modelOptionsLine(model: ModelOptionsStatus): string {
  const applied = Object.entries(model.applied).map(([path, value]) => `${path} ${value}`);
  const from = model.source === null ? model.file : `${model.file} (${model.source})`;
  const overridden = model.overridden.length > 0 ? `; overridden by your options: ${model.overridden.join(', ')}` : '';
  return `model options from ${from}: ${applied.length > 0 ? applied.join(', ') : 'none applied'}${overridden}${operatingPointNote(model)}`;
}

/** Where the file says what its point was chosen on: "; operating point: edgearmor calibrate, 2026-11-28, FPR 0.05 on 240 checks (96 real calls)". */
function operatingPointNote(model: ModelOptionsStatus): string {
  const c = model.calibration;
  if (c === undefined) return '';
  const when = model.created === undefined ? '' : `, ${model.created.slice(0, 10)}`;
  const auc = c.rocAuc === null ? '' : `, ROC-AUC ${c.rocAuc.toFixed(3)}`;
  return `; operating point: ${model.source ?? 'unnamed'}${when}, FPR ${c.targetFpr} on ${c.injected + c.benign} checks (${c.realCalls} real calls): ${(100 * c.tpr).toFixed(1)}% of planted injections blocked at ${(100 * c.fpr).toFixed(1)}% benign${auc}`;
}

/**
 * For `check --traffic` on an agent the proxy does not know: the command that adapts the guard to it (from
 * the model that was checked with, when not the embedded one), or, with too few conversations for
 * adaptation, how many more to log first.
 */
export function adaptHint(file: string, conversations: number, format?: string, model?: string): string {
  const from = model === undefined ? '' : ` --base-model ${shellWord(model)}`;
  const command = `npx edgearmor adapt ${shellWord(file)}${format ? ` --format ${format}` : ''}${from} --out my-agent-model`;
  return conversations >= MIN_ADAPT_CONVERSATIONS
    ? `next: ${command} (about 30 minutes on 2 cores; README, "Adapt EdgeArmor to your agent")`
    : `next: log at least ${MIN_ADAPT_CONVERSATIONS} conversations of this agent with a tool call after a user message (this file has ${conversations}), then ${command}`;
}

/** A path as one shell word: as it is when it needs no quoting, else in single quotes. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

function num(n: number | null | undefined, digits = 3): string {
  if (n === null || n === undefined) return 'n/a';
  return Number.isFinite(n) ? n.toFixed(digits) : String(n);
}

function fmt(n: number, width: number): string {
  return num(n).padStart(width);
}

/** Row labels of the variants that remove no particular span or group. */
const FIXED_LABELS: Readonly<Record<string, string>> = {
  full: 'full conversation',
  'no-user': 'without the user request (dU)',
  deduplicated: 'one copy of each repeated result (baseline of duplicates)',
  'deduplicated-no-user': 'one copy of each, without the user request',
};

/** The human-readable table of one verdict; `legend: false` leaves out the legend line a run already printed above an earlier table. */
export function verdictTable(id: string, input: GuardInput, v: Verdict, options: { explain?: boolean; legend?: boolean } = {}): string {
  const found = v.reason === 'model' ? verdictFindings(v) : [];
  const head = `case ${id}: ${v.decision.toUpperCase()} (${verdictHeadline(v, found)}) -> ${input.action.name}`;
  const explain = options.explain ? `  explain: ${explainVerdict(input, v)}\n` : '';
  const definitions = definitionLines(v.toolDefinitions ?? []);
  const a = v.attribution;
  if (!a) return `${head}${v.error ? `\n  error: ${v.error.code}: ${v.error.message}` : ''}\n${definitions}${explain}`;

  const rows: Array<{ label: string; values: string; flag: string }> = [];
  for (const x of a.variants.filter((y) => y.kind !== 'no-tool')) {
    const span = x.kind === 'no-span' ? a.spans.find((s) => `no-span:${s.spanId}` === x.id) : undefined;
    const sentences = x.kind === 'no-call-sentences' ? a.spans.find((s) => `no-call-sentences:${s.spanId}` === x.id) : undefined;
    const group = x.kind === 'no-group' ? a.groups.find((g) => `no-group:${g.groupId}` === x.id) : undefined;
    const label =
      FIXED_LABELS[x.id] ??
      (span
        ? `without ${span.toolName ?? 'tool'} result, ${messageRef(span.messageIndex)} (dS)`
        : sentences
          ? `without its sentences naming the call, ${messageRef(sentences.messageIndex)} (dC)`
          : group
            ? `without results ${messageRefs(group.messageIndexes)}: ${group.reasons.join(', ')} (dG)`
            : x.id);
    const spanFlagged = span !== undefined && span.flagged && !flaggedByCallSentences(span);
    const flag = spanFlagged
      ? '  FLAGGED: injected tool result'
      : sentences?.callSentences?.flagged
        ? '  FLAGGED: injected sentences in a long result'
        : group?.flagged
          ? '  FLAGGED: injected through these results together'
          : '';
    rows.push({ label, values: `${fmt(x.logProb, 14)}${x.id === 'full' ? '' : fmt(x.rawDelta, 11) + fmt(x.normalizedDelta, 12)}`, flag });
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
      const where = top ? ` on ${top.tool}` : '';
      // The flow of a flagged tool is the verdict's: control when that tool chose the call, data when it set only arguments.
      const flow = tp.detected && tp.sourceTool === mg.poisonedTool && tp.flow ? `, ${tp.flow} flow` : '';
      lines.push(`  MindGuard attention: max AIR ${num(mg.score)}${where}, threshold ${num(mg.threshold, 2)}${mg.detected ? `  FLAGGED: tool ${mg.poisonedTool} pulls the call (its description or its results${flow})` : ''}`);
    }
    if (tp.unavailable.length > 0) lines.push(`  tool-description checks not run: ${tp.unavailable.join('; ')}`);
  }
  const u = v.unlikelyTool;
  if (u) lines.push(`  unlikely tool: log P(tool name) ${num(u.logProbPerToken)} a token, threshold ${num(u.threshold, 2)}${u.flagged ? '  FLAGGED: nothing in the context explains calling this tool to the proxy' : ''}`);
  if (v.windows) {
    const w = v.windows;
    const parts = w.judged.map((j, k) => {
      const cut = j.cutDescriptions.length > 0 ? ` (cut to fit: ${j.cutDescriptions.join(', ')})` : '';
      return `window ${k + 1}: results ${j.messages.length > 0 ? messageRefs(j.messages) : '-'}, descriptions ${j.tools.join(', ')}${cut}`;
    });
    const missing = [...w.notJudged.messages.map(messageRef), ...w.notJudged.tools];
    lines.push(`  scored in ${w.count} windows, ${w.passes} passes; ${parts.join('; ')}${missing.length > 0 ? `; NOT JUDGED (maxPasses): ${missing.join(', ')}` : ''}`);
  }
  if (v.truncation) {
    const kept = v.truncation.keptCallSentences ?? {};
    const cut = Object.entries(v.truncation.shortenedMessages).map(
      ([msg, tokens]) => `${messageRef(Number(msg))} lost ${tokens} tokens${kept[Number(msg)] ? ` (kept ${kept[Number(msg)]} sentences naming the call)` : ''}`,
    );
    for (const [msg, chars] of Object.entries(v.truncation.charsCutBeforeTokenizing ?? {})) cut.push(`${messageRef(Number(msg))} lost ${chars} characters before tokenizing`);
    if (v.truncation.droppedToolDefinitions) cut.unshift('tool definitions dropped');
    lines.push(`  truncated to fit the proxy's context window: ${cut.join('; ')}`);
  }

  const rule = a.userWeight === null ? `rule ${a.rule}` : `rule ${a.rule} (flag when dS > ${a.userWeight} x dU - tau)`;
  const legend =
    options.legend === false
      ? ''
      : "  legend: delta = drop in log P(action) when that part is removed (norm = per action token); dU = the user request's norm delta, dS = a tool result's or description's, dG = a group of results' (judged like dS, plus the group margin); " +
        'tau = margin; AIR = attention to a tool relative to the user request and the called tool\n';
  return `${head}\n  ${rule}, tau ${a.tau}, ${a.actionTokenCount} action tokens, ${v.backend ?? ''} ${v.proxy ?? ''}\n${legend}${lines.join('\n')}\n${definitions}${explain}`;
}

/** The tool-definition findings of a verdict, one line each (hidden text with what the model reads and what a person sees, a change with its diff), or ''. */
export function definitionLines(findings: readonly DefinitionFinding[]): string {
  if (findings.length === 0) return '';
  return `${['  tool definitions (checked without the model):', ...findings.flatMap((f) => findingLines(f, '    '))].join('\n')}\n`;
}

/** One finding as lines: its kind, tool and text, then what the model reads beside what a person sees (hidden text), the words that matched, or the diff. */
export function findingLines(f: DefinitionFinding, indent = ''): string[] {
  const lines = [`${indent}${f.kind} ${f.server}/${f.tool}${f.decides ? '  DECIDES: blocked by its policy' : ''}: ${f.text}`];
  if (f.model !== undefined) lines.push(`${indent}  the model reads: ${JSON.stringify(f.model)}`, `${indent}  a person sees:   ${JSON.stringify(f.person ?? '')}`);
  else if (f.evidence !== undefined) lines.push(`${indent}  ${JSON.stringify(f.evidence)}`);
  for (const d of f.diff ?? []) lines.push(`${indent}  ${d}`);
  return lines;
}
