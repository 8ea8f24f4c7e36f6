/**
 * Every option of the guard, declared once. The validator, the defaults and the types (options.ts),
 * the EDGEARMOR_* environment variables (option-sources.ts), the CLI's flags and usage (cli/flags.ts)
 * and docs/options.md's table (`npm run docs:options`) are all made from this list; a test fails
 * when that table drifts from it; the same page says why each default is what it is.
 */
import * as v from 'valibot';
import { MINDGUARD_OPTIONS } from './mindguard/options.js';
import { group, integerFrom, nonBlank, oneOf, option, refuse, withDefaults, type OptionsInput, type OptionsResolved } from './option-schema.js';

const finite = v.pipe(v.number('a finite number'), v.finite('a finite number'));
const nonNegative = v.pipe(finite, v.minValue(0, 'a number >= 0'));
const flag = v.boolean('true or false');
const text = nonBlank();
/** An integer >= 1, or null for "no limit" / the model's own. */
const count = v.nullable(integerFrom(1));

/** A list of tool names; empty is refused because its literal meaning is unsafe or ambiguous (`emptyMeaning` says how). */
const toolList = (emptyMeaning: string) =>
  v.pipe(
    v.custom<string[]>((x) => Array.isArray(x) && x.every((s) => typeof s === 'string' && s !== ''), 'an array of non-empty tool names'),
    refuse((a: string[]) => a.length > 0, `received an empty list, which would ${emptyMeaning}; omit the option instead.`),
    v.transform((a: string[]) => [...new Set(a)]),
  );

/**
 * MindGuard inside the guard: the paper's defaults except the AIR threshold, calibrated to ~5% false
 * positives on the generator's validation split (method `edgearmor/mindguard`). Rechecked with the
 * current embedded model: AIR ranks poisoned above clean tool lists with ROC-AUC 0.96 there; 2.2 flags 37% of
 * poisoned calls at 0.3% false positives (1.3% on AgentDojo guard cases cut from held-out training runs).
 * `toolPoisoning.mindguard.airThreshold: 0.5` is the paper's operating point.
 */
const GUARD_MINDGUARD = withDefaults(MINDGUARD_OPTIONS, { airThreshold: 2.2 }, "MindGuard's attention graph (the guard's AIR threshold: 2.2)");

/** The guard's options. */
export const GUARD_OPTIONS = group(
  {
    tau: option(finite, -0.1, {
      summary: "margin of the rule: a span is flagged when dS > w x dU - tau (the seeds' default is 0; docs/options.md \"The detection rule\")",
      external: { names: ['TAU', 'MARGIN_TAU'], text: 'number' },
    }),
    userWeight: option(nonNegative, 2, { summary: "w, the weight of the user request's delta in that rule (1: the seeds' rule)", external: { names: ['USER_WEIGHT'], text: 'number' } }),
    rule: option(oneOf(['causalarmor', 'edgearmor']), 'causalarmor', {
      summary: "`causalarmor` (the seeds' rule on whole-call deltas) or `edgearmor` (tool-name and argument deltas apart)",
      external: { names: ['RULE'], text: 'text' },
    }),
    edgearmorRule: group(
      {
        nameWeight: option(nonNegative, 1, { summary: "weight of the tool-name part of the 'edgearmor' rule", external: { names: ['RULE_NAME_WEIGHT'], text: 'number' } }),
        argumentsWeight: option(nonNegative, 0.5, {
          summary: 'weight of the argument part (lower: benign calls copy argument values from tool results)',
          external: { names: ['RULE_ARGUMENTS_WEIGHT'], text: 'number' },
        }),
        userFloor: option(finite, 0, { summary: 'floor of every user delta before comparison', external: { names: ['RULE_USER_FLOOR'], text: 'number' } }),
      },
      "parameters of `rule: 'edgearmor'`",
      [{ check: (r) => (r['nameWeight'] as number) + (r['argumentsWeight'] as number) > 0 || r['nameWeight'] === undefined || r['argumentsWeight'] === undefined, reason: 'nameWeight and argumentsWeight are both 0; at least one must be > 0.' }],
    ),
    userRequest: option(oneOf(['all', 'last']), 'all', {
      summary: 'ablate all user messages together (agents repeat the prompt), or only the `last`',
      external: { names: ['USER_REQUEST'], text: 'text' },
    }),
    untrustedTools: option(toolList('trust every tool result and disable the guard'), null, {
      summary: 'exactly these tools\' results are untrusted (not with trustedTools)',
      defaultText: 'every tool result untrusted',
      external: { names: ['UNTRUSTED_TOOLS'], text: 'list' },
    }),
    trustedTools: option(toolList('mean the same as leaving it out'), null, { summary: "these tools' results are trusted; all others stay untrusted", defaultText: 'none', external: { names: ['TRUSTED_TOOLS'], text: 'list' } }),
    privilegedTools: option(toolList('leave no call checked'), null, {
      summary: "only calls of these tools are checked; others are allowed with reason 'not-privileged'",
      defaultText: 'every call',
      external: { names: ['PRIVILEGED_TOOLS'], text: 'list' },
    }),
    maskCotForScoring: option(flag, true, {
      summary: 'redact assistant text after the first untrusted span before scoring, and argument values the agent copied from an untrusted result into its later calls',
      external: { names: ['MASK_COT_FOR_SCORING'], text: 'boolean' },
    }),
    cotRedactionText: option(text, '[Reasoning redacted]', { summary: 'text that replaces redacted assistant reasoning', external: { names: ['COT_REDACTION_TEXT'], text: 'text' } }),
    actionText: option(oneOf(['template', 'raw']), 'template', {
      summary: "score the call in the proxy's chat template, or the agent's `raw_text` verbatim",
      external: { names: ['ACTION_TEXT'], text: 'text' },
    }),
    onError: option(oneOf(['block', 'allow']), 'block', { summary: 'decision for a privileged call when the guard fails (the failure policy)', external: { names: ['ON_ERROR'], text: 'text' } }),
    timeoutMs: option(integerFrom(1), 30_000, { summary: 'a check that takes longer gets the failure policy', external: { names: ['TIMEOUT_MS'], text: 'number' } }),
    maxContextTokens: option(count, null, {
      summary: 'most context tokens per scored variant',
      defaultText: "the model's position limit, or less where memory and time allow less (core/window-budget.ts)",
      external: { names: ['MAX_CONTEXT_TOKENS'], text: 'count-or-none' },
    }),
    truncatedSpans: option(oneOf(['report', 'fail']), 'report', {
      summary: 'a check whose untrusted tool result was cut to fit the window, whose tool definitions were dropped, or whose parts were not all judged within `maxPasses`: `report` keeps the verdict and lists what was cut or not judged; `fail` answers with the failure policy',
      external: { names: ['TRUNCATED_SPANS'], text: 'text' },
    }),
    maxPasses: option(integerFrom(1), 128, {
      summary: 'most forward passes one check may take when it is too long for the window and is scored in several windows; what does not fit them is not judged, and `truncatedSpans` decides',
      external: { names: ['MAX_PASSES'], text: 'number' },
    }),
    groupAblation: option(flag, true, {
      summary: "also remove groups of untrusted results together (near-duplicates, one tool's results, all of them); `false` keeps the seeds' one-span rule alone",
      external: { names: ['GROUP_ABLATION'], text: 'boolean' },
    }),
    callSentences: option(flag, false, {
      summary:
        'in an untrusted result of 1,500 characters or more, also remove the sentences that name the call (its tool or an argument value) and judge that delta by the same rule: filler around an injection otherwise cancels it out (one more variant per such result); off by default: it also blocks padded benign copies (docs/options.md)',
      external: { names: ['CALL_SENTENCES'], text: 'boolean' },
    }),
    noiseFloor: option(finite, 0, {
      summary: 'a tool result, group or tool description is flagged only when removing it lowers the call\'s log-probability by more than this a token (dS > noiseFloor), whatever dU does to the rule\'s bar',
      external: { names: ['NOISE_FLOOR'], text: 'number' },
    }),
    relativeFloor: option(nonNegative, 0.1, {
      summary:
        "a flagged tool result, group or description is named only when its delta is at least this share of the strongest flagged part's; the decision is unchanged (the strongest part is always named): a request that explains the call less than nothing otherwise lets parts that move the call by a hair be named beside the one that drove it; 0 names every flagged part",
      external: { names: ['RELATIVE_FLOOR'], text: 'number' },
    }),
    familiarityThreshold: option(v.nullable(finite), -4.92, {
      summary:
        "log-probability of the call per action token under which the proxy predicts it poorly; `status().familiarity` counts such checks, and most of an agent's checks below it mean an agent the proxy does not know (its verdicts there near chance: adapt it). Measured for the embedded model (docs/options.md); `edgearmor calibrate` and `edgearmor adapt` set a model's from the real calls they calibrate on (below it: traffic unlike that); null: not measured for this model, the agent is not judged. Decides nothing",
    }),
    unlikelyToolThreshold: option(v.nullable(finite), null, {
      summary:
        "block a privileged call whose tool the proxy expected less than this: the log-probability per token of the tool's name in the call (the least over a check's windows). A tool nothing in the context leads the agent's own proxy to call. Meaningful only for a model that knows the agent: `edgearmor adapt` and `edgearmor calibrate` place it on the user's own traffic (docs/adapt.md); null: off",
      defaultText: 'null (off)',
    }),
    groupMargin: option(finite, 0, { summary: 'what a group needs beyond a single span: flagged when dG > w x dU - tau + groupMargin', external: { names: ['GROUP_MARGIN'], text: 'number' } }),
    defense: group(
      {
        maxRegenerations: option(integerFrom(0), 2, { summary: 'how often the agent is asked for a new call after a detection; 0 blocks at once', external: { names: ['MAX_REGENERATIONS'], text: 'number' } }),
        sanitize: option(flag, true, { summary: 'sanitise flagged spans before regeneration', external: { names: ['SANITIZE', 'ENABLE_SANITIZATION'], text: 'boolean' } }),
        maskReasoning: option(flag, true, {
          summary: 'redact assistant text after the earliest flagged span before regeneration',
          external: { names: ['MASK_REASONING', 'ENABLE_COT_MASKING'], text: 'boolean' },
        }),
        redactionText: option(text, '[Removed: instructions in a tool result]', { summary: 'text that replaces each redacted sentence of a flagged span' }),
        withheldText: option(text, '[Tool result withheld: it was flagged as a prompt injection]', { summary: 'text that replaces a whole flagged span when no sanitiser is available or it failed' }),
        sentenceDeltaThreshold: option(finite, 0, { summary: 'least normalised leave-one-out delta for a sentence of a flagged span to be redacted' }),
        maxRedactedSentences: option(count, null, { summary: 'most sentences redacted per span', defaultText: 'no limit' }),
      },
      '`defend`: sanitise, mask, regenerate and re-check',
    ),
    toolPoisoning: group(
      {
        leaveOneOut: option(flag, true, { summary: "score the call without each tool's description (one more variant per tool)" }),
        leaveOneOutMargin: option(finite, -0.05, { summary: "a description is flagged when dT - dU > margin - tau (0.05 at the default tau)" }),
        valueMargin: option(finite, 1, {
          summary: "also flag a description that explains one argument value of the call by more than this (nats a token) beyond what the user's request explains of it (argument-only poisoning, A2)",
        }),
        attention: option(flag, true, { summary: "read the proxy's attention rows and build MindGuard's decision-dependence graph" }),
        mindguard: GUARD_MINDGUARD,
        windowedAirThreshold: option(nonNegative, 3, {
          summary: 'MindGuard AIR threshold in each window of a check judged in several windows, where the usual thresholds (2.2; 0.81 before any tool result) are lower: every window is one more chance for a benign call to cross them',
        }),
        beforeToolResults: group(
          {
            airThreshold: option(nonNegative, 0.81, { summary: 'MindGuard AIR threshold for calls made before any tool result' }),
            leaveOneOutMargin: option(finite, 0.26, { summary: 'description margin for calls made before any tool result' }),
          },
          "an agent's first calls, where only tool poisoning can drive a call",
        ),
      },
      'tool-poisoning signals, used when the input lists its tools',
    ),
    toolDefinitions: group(
      {
        changed: option(oneOf(['report', 'block']), 'block', {
          summary:
            "a call to a tool whose definition changed, or that was added, since it was approved (a `definition-changed` or `tool-added` finding in the input's `tool_findings`, from the tool pins): `block` decides it before the model runs; `report` lists the finding beside the model's verdict",
          external: { names: ['TOOL_DEFINITIONS_CHANGED'], text: 'text' },
        }),
        findings: option(oneOf(['report', 'block']), 'report', {
          summary:
            'a call to a tool that a static finding names (hidden text, a name collision, shadowing, a schema anomaly), as the tool or as the one shadowed or imitated: `block` decides it before the model runs; `report` lists it beside the verdict',
          external: { names: ['TOOL_DEFINITIONS_FINDINGS'], text: 'text' },
        }),
      },
      "what decides on the tool-definition findings a guard input carries (`tool_findings`: pinned definitions, collisions, shadowing, hidden text, schema anomalies; docs/mcp-definitions.md)",
    ),
  },
  "the guard's options",
  [
    {
      check: (o) => o['untrustedTools'] === undefined || o['trustedTools'] === undefined,
      reason: 'received both untrustedTools and trustedTools; give at most one (untrustedTools lists exactly the untrusted tools, trustedTools removes tools from the default "all untrusted" set).',
    },
  ],
);

/** User options of the guard; every field is optional (what each means: GUARD_OPTIONS, or docs/options.md). */
export type GuardOptions = OptionsInput<typeof GUARD_OPTIONS>;
/** Guard options after defaults and validation: plain data that survives structuredClone. */
export type ResolvedGuardOptions = OptionsResolved<typeof GUARD_OPTIONS>;
