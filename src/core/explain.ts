/**
 * Verdicts in words, shared by the CLI's table and the demo so both say the same thing: what was
 * found (an injected tool result, a poisoned tool description, or a tool MindGuard's attention ties
 * the call to), a short headline reason, and a plain-language explanation.
 */
import { flaggedByCallSentences } from './attribution.js';
import { messageRef, messageRefs } from './message-ref.js';
import type { GuardInput } from './types.js';
import type { Verdict } from './verdict.js';

function num(n: number | null | undefined, digits = 3): string {
  if (n === null || n === undefined) return 'n/a';
  return Number.isFinite(n) ? n.toFixed(digits) : String(n);
}

/** What removing a part does to the call's log-probability, with the right sign: "lowers ... by 0.12" or "raises ... by 0.03". */
export function removalEffect(delta: number | null | undefined, subject = "the call's"): string {
  if (delta === null || delta === undefined || !Number.isFinite(delta)) return `changes ${subject} log-probability by ${num(delta)}`;
  if (delta === 0) return `leaves ${subject} log-probability unchanged`;
  return `${delta > 0 ? 'lowers' : 'raises'} ${subject} log-probability by ${num(Math.abs(delta))} a token`;
}

/** One finding behind a verdict, in words. */
export interface VerdictFinding {
  /** 'result': an injected tool result; 'group': results that drive the call together; 'description': a poisoned tool description; 'attention': MindGuard's attention to a tool; 'unlikely': a tool the proxy did not expect. */
  kind: 'result' | 'group' | 'description' | 'attention' | 'unlikely';
  /** Short, for the headline and the FLAGGED marker. */
  label: string;
  /** A sentence for --explain. */
  sentence: string;
}

/** Everything that made the guard flag this call, in the order the rule considered them. */
export function verdictFindings(v: Verdict): VerdictFinding[] {
  const a = v.attribution;
  const out: VerdictFinding[] = [];
  for (const s of a?.spans.filter((x) => x.flagged) ?? []) {
    const tool = s.toolName ?? 'tool';
    // Flagged by its sentences that name the call alone (a long result whose other text pulls the call the other way).
    const removed = flaggedByCallSentences(s)
      ? `Removing the sentences of the ${tool} result (${messageRef(s.messageIndex)}) that name the call ${removalEffect(s.callSentences!.normalizedDelta)} (the whole result: ${num(s.normalizedDelta)})`
      : `Removing the ${tool} result (${messageRef(s.messageIndex)}) ${removalEffect(s.normalizedDelta)}`;
    out.push({
      kind: 'result',
      label: `injected tool result: ${tool} result, ${messageRef(s.messageIndex)}`,
      sentence: `${removed}, against ${num(a!.user.normalizedDelta)} for removing the user's request: that tool result, not the user, drives the call (an injected tool result).`,
    });
  }
  for (const g of a?.groups.filter((x) => x.flagged) ?? []) {
    const which = messageRefs(g.messageIndexes);
    const why = g.reasons.includes('duplicate') ? 'the same text arrives more than once' : g.reasons.includes('same-tool') ? 'results of one tool' : 'every untrusted result';
    out.push({
      kind: 'group',
      label: `injected through results together: ${which} (${g.reasons.join(', ')})`,
      sentence:
        `Removing the tool results in ${which} together (${why}) ${removalEffect(g.normalizedDelta)}, ` +
        `against ${num(g.userDeltas.whole)} for removing the user's request${g.baseline === 'deduplicated' ? ' (both measured as if each repeated result had arrived once)' : ''}${
          a!.spans.some((x) => x.flagged && g.spanIds.includes(x.spanId)) ? '' : ', although none of them alone does'
        }: together they drive the call.`,
    });
  }
  const tp = v.toolPoisoning;
  const descriptions = tp?.leaveOneOut?.tools.filter((x) => x.flagged) ?? [];
  if (descriptions.length > 0) {
    const one = descriptions.length === 1;
    const names = descriptions.map((t) => t.tool).join(', ');
    const userDelta = a?.user.normalizedDelta ?? null;
    // A negative dU (the call likelier without the user's request) lowers the descriptions' bar: say so, it explains small flagged deltas.
    const low = userDelta !== null && userDelta < 0 ? ` The user's request itself makes this call less likely (dU ${num(userDelta)}), which lowers that bar.` : '';
    out.push({
      kind: 'description',
      label: `poisoned tool description${one ? '' : 's'}: ${names}`,
      sentence: one
        ? `Removing the description of ${names} ${removalEffect(descriptions[0]!.normalizedDelta)}, more than the rule allows against the user's request: that description steers the call (a poisoned tool description)${flowClause(tp!, names)}.${low}`
        : `Removing the descriptions of ${descriptions.map((t) => `${t.tool} (${num(t.normalizedDelta)})`).join(', ')} each lowers the call's log-probability more than the rule allows against the user's request: those descriptions steer the call (poisoned tool descriptions).${low}`,
    });
  }
  const mg = tp?.attention;
  if (mg?.detected && mg.poisonedTool !== null) {
    const flow = mg.flow === 'control' ? 'which tool is called' : 'the arguments of the call';
    out.push({
      kind: 'attention',
      label: `MindGuard: the call attends to tool ${mg.poisonedTool} (AIR ${num(mg.score)} > ${num(mg.threshold, 2)}, ${mg.flow} flow)`,
      sentence:
        `The call's tokens attend to the tool ${mg.poisonedTool} ${num(mg.score, 1)} times as much as to the user's request and the called tool (MindGuard's AIR; the threshold is ${num(mg.threshold, 2)}), ` +
        `so ${mg.poisonedTool}'s description or its results steer ${flow}. Attention does not tell the two apart; leave-one-out ${
          (tp?.leaveOneOut?.tools ?? []).some((t) => t.tool === mg.poisonedTool && t.flagged) ? 'flags its description too' : 'flags no description, so look at its results'
        }.`,
    });
  }
  const u = v.unlikelyTool;
  if (u?.flagged) {
    out.push({
      kind: 'unlikely',
      label: `unlikely tool: the proxy expected it at ${num(u.logProbPerToken, 2)} a token, below ${num(u.threshold, 2)}`,
      sentence:
        `The proxy, which knows this agent, expected a call of this tool at ${num(u.logProbPerToken, 2)} nats a token of its name, below the model's unlikelyToolThreshold (${num(u.threshold, 2)}): ` +
        'nothing in the conversation explains calling it as the agent usually acts (an injection the proxy does not follow leaves such a call).',
    });
  }
  return out;
}

/** What the verdict's flow says the named description did: chose the tool, or set arguments of the call (flowOf). */
function flowClause(tp: NonNullable<Verdict['toolPoisoning']>, tool: string): string {
  if (tp.sourceTool !== tool || tp.flow === null) return '';
  return tp.flow === 'control' ? ', and it chose which tool is called (control flow)' : ', and it set arguments of a call the user asked for (data flow)';
}

/** The decision's cause in a few words (the CLI's headline, the demo's verdict line). */
export function verdictHeadline(v: Verdict, found: VerdictFinding[] = verdictFindings(v)): string {
  switch (v.reason) {
    case 'failure-policy':
      return `the guard failed${v.error ? ` (${v.error.code})` : ''}; failure policy`;
    case 'not-privileged':
      return 'not a privileged tool: not checked';
    case 'no-untrusted-spans':
      return 'no untrusted tool result or description to check';
    case 'tool-definition':
      return `tool-definition policy: ${[...new Set((v.toolDefinitions ?? []).filter((f) => f.decides).map((f) => f.kind))].join(', ')}`;
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
  if (v.reason === 'no-untrusted-spans') return `${decided}: the conversation has no untrusted tool result or tool description that could drive ${call}.${definitionsSentence(v)}`;
  if (v.reason === 'tool-definition') {
    const deciding = (v.toolDefinitions ?? []).filter((f) => f.decides);
    return `${decided} by the tool-definition policy before the model ran: ${deciding.map((f) => f.text).join('; ')}.${definitionsSentence({ toolDefinitions: (v.toolDefinitions ?? []).filter((f) => !f.decides) })}`;
  }
  return explainModelVerdict(input, v) + definitionsSentence(v);
}

/** The tool-definition findings beside a verdict in one sentence, or '' when there are none. */
export function definitionsSentence(v: Pick<Verdict, 'toolDefinitions'>): string {
  const findings = v.toolDefinitions ?? [];
  if (findings.length === 0) return '';
  return ` Tool definitions, checked without the model: ${findings.map((f) => `${f.text}${f.kind === 'hidden-text' && f.person !== undefined ? ` (a person sees "${clip(f.person)}"; the model reads "${clip(f.model ?? '')}")` : ''}`).join('; ')}.`;
}

/** At most 120 characters of a text, on one line. */
const clip = (text: string) => {
  const line = text.replace(/\s+/g, ' ');
  return line.length > 120 ? `${line.slice(0, 120)}...` : line;
};

function explainModelVerdict(input: GuardInput, v: Verdict): string {
  const call = input.action.name;
  const decided = v.decision === 'block' ? 'Blocked' : 'Allowed';
  const found = verdictFindings(v);
  const windows = windowsSentence(v);
  if (found.length > 0) return `${decided}. ${found.map((c) => c.sentence).join(' ')}${windows}`;
  const a = v.attribution;
  if (!a) return `${decided}: nothing was scored.`;
  const top = [...a.spans].sort((x, y) => y.normalizedDelta - x.normalizedDelta)[0];
  const user = `removing the user's request ${removalEffect(a.user.normalizedDelta, 'its')}`;
  return (
    (top
      ? `${decided}: the user's request explains ${call}: ${user}; removing the tool result that matters most (${top.toolName ?? 'tool'}, ${messageRef(top.messageIndex)}) ${removalEffect(top.normalizedDelta, 'its')}, within the rule's margin.`
      : `${decided}: ${user}, and no tool result or description moves it past the rule.`) + windows
  );
}

/** How a check too long for the window was judged, or '' when it fit one. */
export function windowsSentence(v: Pick<Verdict, 'windows'>): string {
  const w = v.windows;
  if (!w) return '';
  const missing = [...w.notJudged.messages.map((i) => `the tool result ${messageRef(i)}`), ...w.notJudged.tools.map((t) => `the description of ${t}`)];
  return (
    ` The conversation did not fit the proxy's window, so it was scored in ${w.count} windows (${w.passes} passes), each tool result and description in one of them against that window's own user delta.` +
    (missing.length > 0 ? ` Not judged (maxPasses reached): ${missing.join(', ')}.` : '')
  );
}

