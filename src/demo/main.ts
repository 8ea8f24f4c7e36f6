/**
 * The chat-assistant demo: a scripted agent replays a generated conversation and every call it
 * proposes goes through the guard in the worker (`guard.defend`: check, and when a span is flagged
 * redact it, regenerate, re-check). Query parameters: `model`, `backend`, `domain`, `variant`,
 * `seed`, `threads`, `autorun=1`.
 */
import { createGuard, type WorkerGuard } from '../page/create-guard.js';
import type { BackendPreference } from '../wire/protocol.js';
import { sentenceAblations, splitSentences, type DefenseResult, type SentenceRange } from '../core/defense.js';
import { serializeError } from '../core/errors.js';
import type { GuardProgress, GuardStatus } from '../core/guard-api.js';
import type { Verdict } from '../core/verdict.js';
import { explainVerdict, verdictFindings, verdictHeadline } from '../core/explain.js';
import { familiarityLine } from '../core/familiarity.js';
import { messageRef } from '../core/message-ref.js';
import { DEFAULT_GUARD_OPTIONS } from '../core/options.js';
import { fromMcpToolDefinitions } from '../core/mcp.js';
import { reviewServers, type DefinitionFinding } from '../core/mcp-definitions/index.js';
import { DOMAINS, findCase, type GuardCase, type Message, type ScenarioPick, type ToolCall } from '../scenarios/index.js';
import { modelUrlFromPage, ortWasmPaths } from './page-config.js';
import { attributionChart, h, mindGuardView, sentenceShading } from './views.js';

/** A conversation the scripted agent plays: the messages, the call it proposes, and what it proposes when regenerating. */
interface Conversation {
  messages: Message[];
  action: ToolCall;
  tools?: GuardCase['tools'];
  intended_action?: ToolCall;
}

const MAX_SCENARIO_SEARCH = 5000;
/**
 * The defense redacts a sentence of a flagged result when removing it alone lowers the call's log-probability by more
 * than the rule's margin (-tau, per action token): the sentences that drove the call. The library's default (any
 * positive delta) also strikes benign sentences whose removal moves the call by noise.
 */
const DRIVING_SENTENCE_DELTA = -DEFAULT_GUARD_OPTIONS.tau;
// The agent "types": a short pause between messages so the replay reads as a conversation.
const MESSAGE_DELAY_MS = 120;

const params = new URLSearchParams(location.search);
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

/** What the page exposes for tests and for curious users in the console. */
const demo = {
  status: null as GuardStatus | null,
  error: null as ReturnType<typeof serializeError> | null,
  lastInput: null as Conversation | null,
  lastVerdict: null as Verdict | null,
  lastDefense: null as DefenseResult | null,
  runs: 0,
  guard: null as WorkerGuard | null,
  run: () => runAgent(),
};
(globalThis as Record<string, unknown>)['__edgearmorDemo'] = demo;

function toConversation(c: GuardCase): Conversation {
  return { messages: c.messages, action: { name: c.action.name, arguments: c.action.arguments }, tools: c.tools, intended_action: c.intended_action };
}

// ---- guard -------------------------------------------------------------------------------

const backend = (params.get('backend') ?? 'auto') as BackendPreference;
const threads = params.get('threads');
const modelUrl = modelUrlFromPage(params);

function onProgress(event: GuardProgress): void {
  const bar = $<HTMLProgressElement>('load-progress');
  const label = $('load-label');
  if (event.type === 'file') {
    const total = event.totalBytes;
    if (total) bar.value = event.loadedBytes / total;
    else bar.removeAttribute('value');
    label.textContent = `${event.fromCache ? 'From cache' : 'Downloading'} ${event.file}: ${(event.loadedBytes / 1e6).toFixed(2)}${total ? ` / ${(total / 1e6).toFixed(2)}` : ''} MB`;
  } else if (event.type === 'verified') {
    label.textContent = `Verified ${event.file} (SHA-256)`;
  } else if (event.type === 'session') {
    label.textContent = `Starting the ${event.backend} session…`;
  } else {
    bar.value = 1;
    label.textContent = 'Model loaded';
  }
}

function showStatus(status: GuardStatus): void {
  demo.status = status;
  document.body.dataset['state'] = status.state;
  const plan = status.scoring === 'naive' ? 'all variants batched' : status.scoring === 'prefix' ? 'shared prefixes computed once' : '—';
  $('model-status').textContent = `${status.model ?? '?'} (${status.variant ?? '?'}), context ${status.maxContextTokens ?? '?'} tokens, attention ${status.attention ? 'available' : 'not exported'}, scoring: ${plan}`;
  const name = status.backend === 'webgpu' ? 'WebGPU' : status.backend === 'wasm' ? 'WASM' : (status.backend ?? '—');
  $('backend').replaceChildren(
    h('strong', { id: 'backend-name' }, name),
    // The reason names what was skipped and why ("WebGPU: navigator.gpu is undefined"): said once.
    ...(status.fallbackReason ? [h('span', {}, ` — ${status.fallbackReason}`)] : []),
  );
  // Whether the proxy knows the agent it guards, once a call was checked: pasted conversations of another agent soon say so.
  $('familiarity').textContent = status.familiarity.checks > 0 ? familiarityLine(status.familiarity) : '';
}

const guard = createGuard({
  modelUrl,
  backend,
  wasmPaths: ortWasmPaths(),
  ...(threads !== null ? { wasmThreads: Number(threads) } : {}),
  defense: { sentenceDeltaThreshold: DRIVING_SENTENCE_DELTA },
  onProgress,
});
demo.guard = guard;
$<HTMLSelectElement>('backend-choice').value = backend;
guard.ready.then(
  (status) => {
    showStatus(status);
    $<HTMLButtonElement>('run').disabled = false;
  },
  (error: unknown) => {
    demo.error = serializeError(error);
    document.body.dataset['state'] = 'failed';
    $('load-label').textContent = 'The model did not load';
    $('model-error').textContent = `${demo.error.name}: ${demo.error.message}`;
  },
);

// ---- scenario and chat --------------------------------------------------------------------

function setConversation(c: Conversation): void {
  $<HTMLTextAreaElement>('conversation').value = JSON.stringify(c, null, 2);
}

function readConversation(): Conversation | null {
  const err = $('json-error');
  try {
    const c = JSON.parse($<HTMLTextAreaElement>('conversation').value) as Conversation;
    if (!Array.isArray(c.messages) || typeof c.action?.name !== 'string') throw new Error('needs "messages" (an array) and "action" ({name, arguments})');
    err.textContent = '';
    return c;
  } catch (e) {
    err.textContent = `Invalid conversation JSON: ${(e as Error).message}`;
    return null;
  }
}

function loadScenario(): void {
  const domain = $<HTMLSelectElement>('domain').value;
  const variant = $<HTMLSelectElement>('variant').value as ScenarioPick;
  const seed = Number($<HTMLInputElement>('seed').value) || 0;
  const c = findCase(domain, variant, seed, MAX_SCENARIO_SEARCH);
  const info = $('scenario-info');
  if (!c) {
    info.textContent = `No ${variant} case for ${domain} in the first ${MAX_SCENARIO_SEARCH} cases of seed ${seed}; try another seed.`;
    return;
  }
  info.textContent = `${c.id}: ${c.task}${c.attack ? `, attack ${c.attack.vector}/${c.attack.type}/${c.attack.style}` : ''}`;
  setConversation(toConversation(c));
  $('chat').replaceChildren();
}

function callText(call: { name: string; arguments: unknown }): string {
  // Newlines inside argument strings are shown as line breaks, not as JSON's escaped "\n" (an escaped backslash stays).
  const json = JSON.stringify(call.arguments).replace(/(?<!\\)((?:\\\\)*)\\n/g, '$1\n');
  return `${call.name}(${json})`;
}

function chatItem(m: Message, index: number): HTMLElement {
  const who = m.role === 'tool' ? `tool result: ${m.tool_name ?? ''}` : m.role;
  const li = h('li', { class: `msg ${m.role}`, 'data-index': String(index) }, h('span', { class: 'who' }, who));
  if (m.content) li.append(h('p', {}, m.content));
  for (const call of m.tool_calls ?? []) li.append(h('code', { class: 'call' }, `→ ${callText(call)}`));
  return li;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ---- verdict views ------------------------------------------------------------------------

/** The conversation's tools checked without the model, as one server's (hidden text, schema anomalies); tools the guard will refuse give none here. */
function definitionFindings(c: Conversation): DefinitionFinding[] {
  try {
    return c.tools ? reviewServers([{ server: 'demo', tools: fromMcpToolDefinitions(c.tools, 'tools') }]) : [];
  } catch {
    return [];
  }
}

function renderVerdict(v: Verdict, input: Conversation): void {
  const el = $('verdict');
  el.dataset['decision'] = v.decision;
  el.dataset['detected'] = String(v.detected);
  const findings = v.reason === 'model' ? verdictFindings(v) : [];
  // Words, not emoji: the decision reads the same on systems without an emoji font. The line names the call checked;
  // the findings, when the model made any, are the reason (the headline would only repeat them).
  el.replaceChildren(
    h('p', { class: `decision ${v.decision}` }, h('strong', { class: 'badge' }, v.decision === 'block' ? 'Blocked' : 'Allowed'), ' ', h('code', { class: 'call', id: 'verdict-call' }, callText(input.action))),
    findings.length ? h('ul', { class: 'findings' }, ...findings.map((f) => h('li', { 'data-kind': f.kind }, f.label))) : h('p', { class: 'headline' }, verdictHeadline(v, findings)),
    ...(v.toolDefinitions?.length
      ? [
          h(
            'ul',
            { class: 'findings definitions' },
            ...v.toolDefinitions.map((f) =>
              h('li', { 'data-kind': f.kind }, `${f.kind}: ${f.text}`, ...(f.model !== undefined ? [h('br'), `a person sees: ${f.person ?? ''}`, h('br'), `the model reads: ${f.model}`] : [])),
            ),
          ),
        ]
      : []),
    h('p', { class: 'explain' }, explainVerdict(input as Parameters<typeof explainVerdict>[0], v)),
    ...(v.score !== null ? [h('p', { class: 'muted', id: 'rule-score' }, ruleScoreText(v))] : []),
    ...(v.message ? [h('p', { class: 'muted' }, v.message)] : []),
  );
  $('chart').replaceChildren(attributionChart(v, { beforeToolResults: input.messages.every((m) => m.role !== 'tool') }));
  const tp = v.toolPoisoning;
  const mg = tp?.attention;
  $('mindguard').replaceChildren(mg ? mindGuardView(mg, tp?.leaveOneOut?.tools.filter((t) => t.flagged).map((t) => t.tool) ?? []) : h('p', { class: 'muted' }, tp?.unavailable.length ? `Not available: ${tp.unavailable.join('; ')}` : 'Shown when the call lists tools.'));
}

async function renderSpan(input: Conversation, v: Verdict, defense: DefenseResult, timings: Record<string, number>): Promise<void> {
  const spans = v.attribution?.spans ?? [];
  const target = spans.find((s) => s.flagged) ?? [...spans].sort((a, b) => b.normalizedDelta - a.normalizedDelta)[0];
  if (!target) {
    $('span').replaceChildren(h('p', { class: 'muted' }, 'No untrusted span in this conversation.'));
    return;
  }
  const text = input.messages[target.messageIndex]?.content ?? '';
  const ranges: SentenceRange[] = splitSentences(text);
  const t0 = performance.now();
  const deltas = ranges.length ? await guard.scoreSentenceAblations(input, target.messageIndex, sentenceAblations(text, ranges)) : [];
  timings['sentence attribution (page)'] = performance.now() - t0;
  const sanitized = defense.sanitizedSpans.find((s) => s.messageIndex === target.messageIndex);
  const redacted = sanitized ? removedSentences(text, ranges, sanitized.after) : new Set<number>();
  const caption = `${target.flagged ? 'Flagged' : 'Most influential (not flagged)'}: ${target.toolName ?? 'tool'} result, ${messageRef(target.messageIndex)}`;
  $('span').replaceChildren(sentenceShading(text, ranges, deltas, redacted, caption, DRIVING_SENTENCE_DELTA));
}

/** The sentences the defense took out of `text`: those not found, in order, in what it left (`after`). */
function removedSentences(text: string, ranges: readonly SentenceRange[], after: string): Set<number> {
  const removed = new Set<number>();
  let cursor = 0;
  ranges.forEach((r, i) => {
    // In order, so a sentence kept further on (or a repeated one) does not hide one that was removed here.
    const at = after.indexOf(text.slice(r.start, r.end), cursor);
    if (at < 0) removed.add(i);
    else cursor = at + (r.end - r.start);
  });
  return removed;
}

function renderDefense(d: DefenseResult): void {
  const el = $('defense');
  el.dataset['final'] = d.finalAction ? 'call' : 'blocked';
  el.replaceChildren(
    h('p', {}, d.finalAction ? h('code', { id: 'final-action' }, callText(d.finalAction)) : h('strong', {}, 'No call is run.')),
    h('p', { class: 'muted' }, d.message),
    ...(d.defended
      ? [
          h('p', {}, `Original call: `, h('code', {}, callText(d.originalAction))),
          h('ol', {}, ...d.attempts.map((a) => h('li', {}, `attempt ${a.attempt}: ${a.action ? callText(a.action) : 'no call'} → ${a.outcome}`))),
        ]
      : []),
  );
}

/** The verdict's score in words: what it is and where the rule flags (a bare number told a reader nothing). */
function ruleScoreText(v: Verdict): string {
  const a = v.attribution;
  const of = a?.userWeight != null ? `: the strongest tool result's (or group's) Δ less ${a.userWeight} × the user's Δ` : ` of the ${a?.rule ?? '?'} rule`;
  return `Score ${v.score!.toFixed(3)}${of}; a result is flagged only above ${a ? (-a.tau).toFixed(2) : '?'} (on ${v.backend ?? '?'})`;
}

function renderTimings(t: Record<string, number>): void {
  const rows = Object.entries(t).map(([k, v]) => h('tr', {}, h('th', { scope: 'row' }, k), h('td', {}, `${v.toFixed(1)} ms`)));
  $('timings').replaceChildren(h('table', { class: 'data-table' }, h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Stage'), h('th', { scope: 'col' }, 'Time'))), h('tbody', {}, ...rows)));
}

// ---- the scripted agent -------------------------------------------------------------------

async function runAgent(): Promise<void> {
  const conversation = readConversation();
  if (!conversation) return;
  const runButton = $<HTMLButtonElement>('run');
  runButton.disabled = true;
  document.body.dataset['run'] = 'running';
  const chat = $('chat');
  chat.replaceChildren();
  try {
    for (const [i, m] of conversation.messages.entries()) {
      if (m.role === 'system') continue;
      chat.append(chatItem(m, i));
      await sleep(MESSAGE_DELAY_MS);
    }
    const proposal = h('li', { class: 'msg assistant proposal' }, h('span', { class: 'who' }, 'assistant proposes'), h('code', { class: 'call' }, callText(conversation.action)), h('p', { class: 'muted' }, 'Checking with the guard…'));
    chat.append(proposal);
    demo.lastInput = conversation;
    const definitions = definitionFindings(conversation);
    const input = { messages: conversation.messages, action: conversation.action, ...(conversation.tools ? { tools: conversation.tools } : {}), ...(definitions.length > 0 ? { tool_findings: definitions } : {}) };
    const t0 = performance.now();
    const defense = await guard.defend(input, {
      // The scripted agent, asked again on the cleaned conversation, proposes what the user asked for.
      regenerate: async () => conversation.intended_action ?? null,
    });
    const timings: Record<string, number> = { ...defense.originalVerdict.timings, 'defend, total (page)': performance.now() - t0 };
    demo.lastVerdict = defense.originalVerdict;
    demo.lastDefense = defense;
    renderVerdict(defense.originalVerdict, conversation);
    renderDefense(defense);
    proposal.querySelector('p')!.textContent = defense.finalAction ? `Guard: ${defense.defended ? 'replaced by' : 'allowed'} ${callText(defense.finalAction)}` : 'Guard: blocked, no call is run.';
    await renderSpan(conversation, defense.originalVerdict, defense, timings);
    renderTimings(timings);
    // The familiarity count after this check; a status that fails leaves the verdict shown as it is.
    await guard.status().then(showStatus, () => undefined);
    demo.runs += 1;
    document.body.dataset['run'] = 'done';
  } catch (error) {
    demo.error = serializeError(error);
    $('verdict').replaceChildren(h('p', { class: 'error', role: 'alert' }, `The guard failed: ${demo.error.name}: ${demo.error.message}`));
    document.body.dataset['run'] = 'failed';
  } finally {
    runButton.disabled = false;
  }
}

// ---- wiring -------------------------------------------------------------------------------

const domainSelect = $<HTMLSelectElement>('domain');
for (const d of DOMAINS) domainSelect.append(h('option', { value: d }, d));
domainSelect.value = params.get('domain') ?? 'travel';
$<HTMLSelectElement>('variant').value = params.get('variant') ?? 'injection';
$<HTMLInputElement>('seed').value = params.get('seed') ?? '1';
$('scenario-form').addEventListener('submit', (e) => {
  e.preventDefault();
  loadScenario();
});
$('run').addEventListener('click', () => void runAgent());
$<HTMLSelectElement>('backend-choice').addEventListener('change', (e) => {
  const next = new URL(location.href);
  next.searchParams.set('backend', (e.target as HTMLSelectElement).value);
  location.assign(next);
});
loadScenario();
if (params.get('autorun') === '1') void guard.ready.then(() => runAgent(), () => undefined);
