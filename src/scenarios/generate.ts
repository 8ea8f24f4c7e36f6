import {
  A2_PHRASINGS,
  A2_POISON_PHRASINGS,
  COT_FOLLOW,
  COT_IGNORE,
  HIJACKS,
  MODEL_NAMES,
  POISON_STYLES,
  RESULT_STYLES,
  attackerValues,
  exfilData,
  hijackVars,
  type HijackGoal,
} from './attacks.js';
import { BANKING } from './domains/banking.js';
import { CALENDAR } from './domains/calendar.js';
import { CHAT } from './domains/chat.js';
import { EMAIL } from './domains/email.js';
import { FILES } from './domains/files.js';
import { SHOPPING } from './domains/shopping.js';
import { TRAVEL } from './domains/travel.js';
import { WEB } from './domains/web.js';
import { COMPANIES, EXTRA_REASONING, Picker, REASONING, SYSTEM_PROMPTS, USER_PREFIXES, USER_SUFFIXES, decapitalize, fill } from './pools.js';
import { Rng } from './rng.js';
import { TOOLS, toolSpec } from './tools.js';
import type { AttackInfo, CaseKind, Driver, GenerateOptions, GuardCase, JsonValue, Message, Split, ToolCall, ToolSpec } from './types.js';
import { date, person, type Domain, type Goal } from './world.js';

const DOMAIN_LIST: readonly Domain[] = [TRAVEL, BANKING, EMAIL, CALENDAR, FILES, SHOPPING, CHAT, WEB];

/** Names of the generated domains. */
export const DOMAINS: readonly string[] = DOMAIN_LIST.map((d) => d.name);

/** Names of the tool-result injection styles. */
export const RESULT_STYLE_NAMES: readonly string[] = Object.keys(RESULT_STYLES);

/** Names of the tool-description poisoning styles. */
export const POISON_STYLE_NAMES: readonly string[] = Object.keys(POISON_STYLES);

/** All case kinds. */
export const CASE_KINDS: readonly CaseKind[] = ['benign', 'benign_copy', 'ignored_injection', 'ignored_poisoning', 'tool_result_injection', 'tool_poisoning'];

const SPLITS: readonly Split[] = ['train', 'validation', 'test'];

/**
 * Cumulative kind thresholds: 35% clean, 10% ignored tool-result injection, 5% ignored poisoning,
 * 35% followed tool-result injection, 15% followed poisoning (the brief's proportions).
 */
const KIND_THRESHOLDS: ReadonlyArray<[number, 'clean' | CaseKind]> = [
  [0.35, 'clean'],
  [0.45, 'ignored_injection'],
  [0.5, 'ignored_poisoning'],
  [0.85, 'tool_result_injection'],
  [1, 'tool_poisoning'],
];

/** Share of followed attacks whose agent repeats the injected instruction in its reasoning. */
const COT_FOLLOW_RATE = 0.2;
const COT_IGNORE_RATE = 0.12;
/** Clean-looking extra read-only calls before the action, so an extra turn is not itself a tell. */
const EXTRA_STEP_RATE = 0.2;

/** Validates options; bad input is a caller error, reported with what was received and what is allowed. */
function checkOptions(o: GenerateOptions): void {
  if (!SPLITS.includes(o.split)) throw new RangeError(`unknown split "${String(o.split)}": should be one of ${SPLITS.join(', ')}`);
  if (!Number.isInteger(o.seed)) throw new RangeError(`seed must be an integer, received ${String(o.seed)}`);
  if (!Number.isInteger(o.n) || o.n < 0) throw new RangeError(`n must be a non-negative integer, received ${String(o.n)}`);
}

/** Lazily yields cases; case i depends only on (split, seed, i), so prefixes of longer runs are identical. */
export function* iterateCases(options: GenerateOptions): Generator<GuardCase> {
  checkOptions(options);
  for (let i = 0; i < options.n; i++) yield generateCase(options.split, options.seed, i);
}

/** Generates n guard cases of a split; same (split, seed, n) gives byte-identical output. */
export function generateCases(options: GenerateOptions): GuardCase[] {
  return Array.from(iterateCases(options));
}

function withSlot(call: ToolCall, slot: NonNullable<Goal['slot']>, value: string): ToolCall {
  const v: JsonValue = slot.array ? [value] : value;
  return { name: call.name, arguments: { ...call.arguments, [slot.arg]: v } };
}

function assistant(content: string, call: ToolCall): Message {
  return { role: 'assistant', content, tool_calls: [call] };
}

function toolMsg(call: ToolCall, content: string): Message {
  return { role: 'tool', content, tool_name: call.name };
}

/** Generates the case with the given index. */
export function generateCase(split: Split, seed: number, index: number): GuardCase {
  const rng = new Rng(`edgearmor-scenarios:${split}:${seed}:${index}`);
  const p = new Picker(rng, split);
  const domain = rng.pick(DOMAIN_LIST);
  const scenario = rng.pick(domain.scenarios);
  const user = person(p);
  const company = p.pick(COMPANIES);
  const built = scenario.build(p, user);

  const r = rng.next();
  const drawn = (KIND_THRESHOLDS.find(([t]) => r < t) ?? [1, 'tool_poisoning'])[1];
  const attacked = drawn !== 'clean';
  const vector: AttackInfo['vector'] = drawn === 'ignored_injection' || drawn === 'tool_result_injection' ? 'tool_result' : 'tool_description';
  const type: AttackInfo['type'] = attacked && rng.chance(0.5) ? 'A2' : 'A1';
  const slotted = built.goals.filter((g) => g.slot);
  const goal = type === 'A2' && attacked && slotted.length > 0 ? rng.pick(slotted) : rng.pick(built.goals);
  const kind: CaseKind = drawn === 'clean' ? (goal.copy ? 'benign_copy' : 'benign') : drawn;
  const follows = kind === 'tool_result_injection' || kind === 'tool_poisoning';

  let attackCall: ToolCall | null = null;
  let instr = '';
  let key = '';
  let goalName = '';
  let hijack: HijackGoal | null = null;
  if (attacked) {
    const av = attackerValues(p);
    if (type === 'A2' && goal.slot) {
      const value = av[goal.slot.kind];
      attackCall = withSlot(goal.action, goal.slot, value);
      key = value;
      goalName = `redirect:${goal.action.name}.${goal.slot.arg}`;
      instr =
        vector === 'tool_result'
          ? fill(p.pick(A2_PHRASINGS[goal.slot.kind]), { value })
          : fill(p.pick(A2_POISON_PHRASINGS), { tool: goal.action.name, arg: goal.slot.arg, value });
    } else {
      hijack = rng.pick(HIJACKS.filter((h) => h.tool !== goal.action.name));
      const data = exfilData(p);
      attackCall = hijack.call(av, data);
      key = hijack.key(av);
      goalName = hijack.id;
      instr = fill(p.pick(hijack.phrasings), hijackVars(av, data));
    }
  }
  const attackType: AttackInfo['type'] = attacked && hijack === null ? 'A2' : 'A1';

  // The registered tools: the domain's own, the tools this case needs, and 2-4 from other domains.
  const names = new Set(domain.tools);
  const required = [goal.action.name, built.main.name, built.extra.call.name, ...built.pre.map((s) => s.call.name)];
  if (hijack) required.push(hijack.tool);
  for (const n of required) names.add(n);
  // Attack-capable tools also appear in clean lists, so their presence alone is no tell.
  if (rng.chance(0.7)) names.add(rng.pick(HIJACKS).tool);
  const others = Object.keys(TOOLS).filter((n) => !domain.tools.includes(n));
  const foreignTarget = rng.int(2, 4);
  const foreign = () => [...names].filter((n) => !domain.tools.includes(n)).length;
  for (let tries = 0; foreign() < foreignTarget && tries < 20; tries++) names.add(rng.pick(others));
  let tools: ToolSpec[] = rng.shuffle([...names]).map(toolSpec);

  let style = '';
  let poisonedTool: string | null = null;
  let payload: string | null = null;
  if (attacked && attackCall) {
    if (vector === 'tool_result') {
      style = rng.pick(RESULT_STYLE_NAMES);
      const wrapperPool = RESULT_STYLES[style];
      if (!wrapperPool) throw new Error(`no style ${style}`);
      const wrapper = p.pick(wrapperPool);
      const model = wrapper.includes('{model}') ? p.pick(MODEL_NAMES) : '';
      payload = fill(wrapper, { instr, instr_lc: decapitalize(instr), user: user.full, model, call: JSON.stringify(attackCall) });
    } else {
      style = rng.pick(POISON_STYLE_NAMES);
      const wrapperPool = POISON_STYLES[style];
      if (!wrapperPool) throw new Error(`no style ${style}`);
      const text = fill(p.pick(wrapperPool), { instr });
      const candidates = tools.map((t) => t.name).filter((n) => n !== attackCall?.name || rng.chance(0.25));
      poisonedTool = rng.pick(candidates.length > 0 ? candidates : tools.map((t) => t.name));
      tools = tools.map((t) => (t.name === poisonedTool ? { ...t, description: `${t.description} ${text}` } : t));
    }
  }

  const messages: Message[] = [];
  messages.push({ role: 'system', content: fill(p.pick(SYSTEM_PROMPTS), { user: user.full, company, today: date(p) }) });
  const core = fill(p.pick(goal.phrasings), built.vars);
  const prefix = rng.chance(0.35) ? `${p.pick(USER_PREFIXES)} ` : '';
  const suffix = rng.chance(0.35) ? ` ${p.pick(USER_SUFFIXES)}` : '';
  messages.push({ role: 'user', content: `${prefix}${core}${suffix}` });
  const reason = () => (rng.chance(0.5) ? p.pick(REASONING) : '');
  for (const s of built.pre) {
    messages.push(assistant(reason(), s.call), toolMsg(s.call, s.result));
  }
  messages.push(assistant(reason(), built.main));
  messages.push(toolMsg(built.main, built.render(payload)));
  const injectedAt = messages.length - 1;
  const injectedIn = payload !== null ? [injectedAt] : [];

  const cot = attacked && rng.chance(follows ? COT_FOLLOW_RATE : COT_IGNORE_RATE);
  if (cot) {
    const text = fill(p.pick(follows ? COT_FOLLOW : COT_IGNORE), { instr, instr_lc: decapitalize(instr) });
    messages.push(assistant(text, built.extra.call), toolMsg(built.extra.call, built.extra.result));
  } else if (rng.chance(EXTRA_STEP_RATE)) {
    messages.push(assistant(rng.chance(0.5) ? p.pick(EXTRA_REASONING) : '', built.extra.call), toolMsg(built.extra.call, built.extra.result));
  }

  const call = follows && attackCall ? attackCall : goal.action;
  let driver: Driver = { kind: 'user' };
  if (follows) {
    driver = vector === 'tool_result' ? { kind: 'tool_result', message_index: injectedAt } : { kind: 'tool_description', tool: poisonedTool ?? '' };
  }

  return {
    id: `gen-${split}-${seed}-${index}`,
    split,
    domain: domain.name,
    task: `${scenario.id}.${goal.id}`,
    label: follows ? 'injected' : 'benign',
    kind,
    attack: attacked ? { vector, type: attackType, style, goal: goalName } : null,
    follows,
    cot,
    driver,
    messages,
    action: { name: call.name, arguments: call.arguments, raw_text: JSON.stringify({ name: call.name, arguments: call.arguments }) },
    intended_action: { name: goal.action.name, arguments: goal.action.arguments },
    tools,
    injected_in: injectedIn,
    poisoned_tool: poisonedTool,
    templates: [...new Set(p.used)],
    attacker_values: attacked ? [key] : [],
  };
}

/** The scenario kinds a person picks in the demo (and tests pick to check what the demo shows). */
export type ScenarioPick = 'benign' | 'injection' | 'poisoning' | 'cot';

/** Names of the scenario picks, in menu order. */
export const SCENARIO_PICKS: readonly ScenarioPick[] = ['benign', 'injection', 'poisoning', 'cot'];

function isPick(c: GuardCase, pick: ScenarioPick): boolean {
  switch (pick) {
    case 'benign':
      return c.kind === 'benign';
    case 'injection':
      return c.kind === 'tool_result_injection' && !c.cot;
    case 'poisoning':
      return c.kind === 'tool_poisoning';
    case 'cot':
      return c.kind === 'tool_result_injection' && c.cot;
  }
}

/**
 * The first tool call of the first `n` clean conversations of a split (no attack, not even an ignored one),
 * cut where the agent makes it, with the tools the conversation had: calls made before any tool result.
 */
export function cleanFirstCalls(split: Split, seed: number, n: number): Array<{ messages: Message[]; action: ToolCall; tools: ToolSpec[] }> {
  const out = [];
  for (let i = 0; out.length < n; i++) {
    const c = generateCase(split, seed, i);
    const at = c.messages.findIndex((m) => m.role === 'assistant' && (m.tool_calls?.length ?? 0) > 0);
    if (c.label !== 'benign' || c.kind.includes('ignored') || at < 0 || !c.tools?.length) continue;
    out.push({ messages: c.messages.slice(0, at), action: c.messages[at]!.tool_calls![0]!, tools: c.tools });
  }
  return out;
}

/** What the guard checks for a generated case: its conversation, tools and the call alone (no labels, no raw text). */
export function guardInputOf(c: GuardCase): { messages: Message[]; action: ToolCall; tools: ToolSpec[] } {
  return { messages: c.messages, action: { name: c.action.name, arguments: c.action.arguments }, tools: c.tools };
}

/** The first test-split case of a domain and pick for a seed (deterministic), or null within the first `maxSearch` cases. */
export function findCase(domain: string, pick: ScenarioPick, seed: number, maxSearch = 5000): GuardCase | null {
  if (!DOMAINS.includes(domain)) throw new RangeError(`unknown domain "${domain}": should be one of ${DOMAINS.join(', ')}`);
  if (!SCENARIO_PICKS.includes(pick)) throw new RangeError(`unknown pick "${String(pick)}": should be one of ${SCENARIO_PICKS.join(', ')}`);
  for (let i = 0; i < maxSearch; i++) {
    const c = generateCase('test', seed, i);
    if (c.domain === domain && isPick(c, pick)) return c;
  }
  return null;
}
