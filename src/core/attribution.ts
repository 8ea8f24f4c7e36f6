import { InvalidInputError } from './errors.js';
import { messageRef } from './message-ref.js';
import type { UntrustedSpan } from './context.js';
import type { ResolvedGuardOptions } from './options.js';
import type { GroupReason } from './groups.js';
import type { Variant, VariantId, VariantKind } from './variants.js';
import { ruleFromOptions, type DeltaParts, type DetectionRule } from './detection-rules.js';

export { causalArmorRule, createCausalArmorRule, createEdgeArmorRule, ruleFromOptions, type DeltaParts, type DetectionRule, type RuleInput, type RuleOutput } from './detection-rules.js';

/** Which part of the rendered action a scored token belongs to. */
export type ActionTokenPart = 'name' | 'arguments' | 'other';


/** Summed log-probs of one part of the action under one variant. */
export interface PartSum {
  logProb: number;
  tokenCount: number;
}

/** Attribution numbers of one variant. */
export interface VariantAttribution {
  id: VariantId;
  kind: VariantKind;
  /** Per-token log-probs of the scored action tokens, as given. */
  tokenLogProbs: number[];
  /** Sum of the action tokens' log-probs: log P(action | variant). */
  logProb: number;
  /** logProb(full) - logProb(variant). */
  rawDelta: number;
  /** rawDelta divided by the real number of scored action tokens. */
  normalizedDelta: number;
  /** Sums per part, when part labels were given. */
  parts: { name: PartSum; arguments: PartSum; other: PartSum } | null;
  /** Normalised deltas split by part. */
  deltas: DeltaParts;
}


/** Attribution of one untrusted span. */
export interface SpanAttribution {
  spanId: number;
  messageIndex: number;
  toolName: string | null;
  rawDelta: number;
  normalizedDelta: number;
  deltas: DeltaParts;
  score: number;
  flagged: boolean;
  /**
   * A long result's sentences that name the call, removed alone (a `no-call-sentences` variant; variants.ts):
   * their deltas, the rule's score and whether they flag the span. The span's `score` is the larger of the
   * two and it is flagged when either is. Absent for short results and results that do not name the call.
   */
  callSentences?: { rawDelta: number; normalizedDelta: number; deltas: DeltaParts; score: number; flagged: boolean };
  /**
   * In a check judged in windows (window-verdict.ts), the user's deltas of the window that judged this span: its
   * score is against them, not against the verdict's `user` (the first window's). Absent for a check scored whole.
   */
  userDeltas?: DeltaParts;
}

/** Whether a flagged span is explained by its sentences that name the call (their score is the span's), not by the whole result's removal. */
export function flaggedByCallSentences(span: Pick<SpanAttribution, 'score' | 'callSentences'>): boolean {
  return span.callSentences?.flagged === true && span.score === span.callSentences.score;
}

/** Attribution of one group of untrusted spans removed together (groups.ts). */
export interface GroupAttribution {
  groupId: number;
  spanIds: number[];
  /** Message indexes of the members, ascending. */
  messageIndexes: number[];
  reasons: GroupReason[];
  /**
   * What the group was judged against: 'full' (the conversation as it is) or, for near-duplicates,
   * 'deduplicated' (the conversation with only the first copy of each repeated result, so a repeated
   * result is judged as if it had arrived once).
   */
  baseline: 'full' | 'deduplicated';
  /** Drops in log P(action) from the baseline: removing the whole group, and removing the user's request. */
  rawDelta: number;
  normalizedDelta: number;
  deltas: DeltaParts;
  /** The user's delta from the same baseline (dU of the full conversation for 'full'). */
  userDeltas: DeltaParts;
  /** The rule's score less the group margin, so that, as for a span, the group is flagged iff score > -tau. */
  score: number;
  flagged: boolean;
}

/** A span the rule flagged, as reported in verdicts. */
export interface FlaggedSpan {
  spanId: number;
  messageIndex: number;
  toolName: string | null;
  /** Set when the span was flagged as a member of this group (removing the group moves the call; no member alone does). */
  groupId?: number;
}

/** Everything the attribution computed: log-probs, raw and normalised deltas, per-span scores and flags. */
export interface AttributionResult {
  /** Name of the rule used ('custom' for a caller-supplied function). */
  rule: string;
  tau: number;
  /** Weight of dU in the 'causalarmor' rule (dS > userWeight x dU - tau); null for other rules. */
  userWeight: number | null;
  /** Real number of scored action tokens. */
  actionTokenCount: number;
  /** Token counts per part, when part labels were given. */
  partTokenCounts: { name: number; arguments: number; other: number } | null;
  logProbFull: number;
  logProbNoUser: number;
  /** Deltas of removing U. */
  user: { rawDelta: number; normalizedDelta: number; deltas: DeltaParts };
  spans: SpanAttribution[];
  /** Groups of spans removed together, when group variants were scored. */
  groups: GroupAttribution[];
  /** The margin a group needs beyond a single span's: flag iff the rule flags it with tau - groupMargin. */
  groupMargin: number;
  /** Every scored variant, in the order given. */
  variants: VariantAttribution[];
  flagged: FlaggedSpan[];
  detected: boolean;
  /** Max over spans and groups of the rule's score (dS - userWeight x dU for the 'causalarmor' rule; a group's less the group margin); null without spans. */
  score: number | null;
}

/** Input of computeAttribution. */
export interface AttributionInput {
  /** The untrusted spans of the context. */
  spans: readonly UntrustedSpan[];
  /** The variants that were scored; must include 'full', 'no-user' and one 'no-span' per span; 'no-group' ones carry their members; a 'no-call-sentences' one per long result may join its span. */
  variants: readonly Pick<Variant, 'id' | 'kind' | 'group'>[];
  /** Per-variant log-probs of the scored action tokens, one per token, same length for every variant. */
  logProbs: ReadonlyMap<string, ArrayLike<number>> | Readonly<Record<string, ArrayLike<number>>>;
  /** Optional part label per scored action token. */
  parts?: readonly ActionTokenPart[] | undefined;
}

/** Options of computeAttribution. */
export interface AttributionOptions {
  /** Margin tau. */
  tau: number;
  /** The rule; a built-in one from ruleFromOptions or a custom function. */
  rule: DetectionRule;
  /** Name reported in the result. */
  ruleName: string;
  /** The 'causalarmor' rule's weight of dU, reported in the result. @defaultValue null */
  userWeight?: number | null;
  /** What a group needs beyond a single span: it is judged with tau - groupMargin. @defaultValue 0 */
  groupMargin?: number;
  /**
   * The noise floor: a span or group is flagged only when removing it lowers the call's log-probability
   * by more than this a token, whatever the rule says (a negative dU must not flag parts whose removal
   * changes nothing or raises the call). @defaultValue -Infinity (no floor)
   */
  noiseFloor?: number;
}

function getLogProbs(source: AttributionInput['logProbs'], id: string): ArrayLike<number> | undefined {
  if (source instanceof Map) return (source as ReadonlyMap<string, ArrayLike<number>>).get(id);
  const record = source as Readonly<Record<string, ArrayLike<number>>>;
  return Object.prototype.hasOwnProperty.call(record, id) ? record[id] : undefined;
}

function sumParts(tokens: readonly number[], parts: readonly ActionTokenPart[] | undefined): VariantAttribution['parts'] {
  if (parts === undefined) return null;
  const out = { name: { logProb: 0, tokenCount: 0 }, arguments: { logProb: 0, tokenCount: 0 }, other: { logProb: 0, tokenCount: 0 } };
  tokens.forEach((lp, i) => {
    const part = out[parts[i] ?? 'other'];
    part.logProb += lp;
    part.tokenCount += 1;
  });
  return out;
}

/** Deltas from another baseline: a - b part by part (null where either is). */
function minus(a: DeltaParts, b: DeltaParts): DeltaParts {
  const part = (x: number | null, y: number | null) => (x === null || y === null ? null : x - y);
  return { whole: a.whole - b.whole, name: part(a.name, b.name), arguments: part(a.arguments, b.arguments) };
}

function partDelta(full: PartSum | undefined, variant: PartSum | undefined): number | null {
  if (full === undefined || variant === undefined || full.tokenCount === 0) return null;
  return (full.logProb - variant.logProb) / full.tokenCount;
}

/** Turns per-variant action-token log-probs into deltas normalised by the real token count, per-part deltas, and per-span detection. */
export function computeAttribution(input: AttributionInput, options: AttributionOptions): AttributionResult {
  const full = getLogProbs(input.logProbs, 'full');
  if (full === undefined) throw new InvalidInputError('logProbs: missing the "full" variant; it is the baseline of every delta.', { variant: 'full' });
  const tokenCount = full.length;
  if (tokenCount === 0) throw new InvalidInputError('logProbs.full: received 0 action tokens; the action must have at least one scored token.', { variant: 'full' });
  if (input.parts !== undefined) {
    if (input.parts.length !== tokenCount) {
      throw new InvalidInputError(`parts: received ${input.parts.length} labels for ${tokenCount} action tokens; give one label per scored token.`, { labels: input.parts.length, tokens: tokenCount });
    }
    const bad = input.parts.find((p) => p !== 'name' && p !== 'arguments' && p !== 'other');
    if (bad !== undefined) throw new InvalidInputError(`parts: received the label ${JSON.stringify(bad)}; allowed are "name", "arguments", "other".`);
  }
  const tokensOf = (id: string): number[] => {
    const values = getLogProbs(input.logProbs, id);
    if (values === undefined) throw new InvalidInputError(`logProbs: missing the "${id}" variant.`, { variant: id });
    if (values.length !== tokenCount) {
      throw new InvalidInputError(`logProbs.${id}: received ${values.length} token log-probs, but "full" has ${tokenCount}; every variant scores the same action tokens.`, {
        variant: id,
        received: values.length,
        expected: tokenCount,
      });
    }
    const arr = Array.from(values);
    // Small positive values are float noise from log-softmax; infinities would turn every delta into NaN or Infinity.
    const badIndex = arr.findIndex((v) => typeof v !== 'number' || !Number.isFinite(v) || v > 1e-6);
    if (badIndex >= 0) {
      throw new InvalidInputError(`logProbs.${id}[${badIndex}]: received ${String(arr[badIndex])}; a log-probability is a finite number <= 0.`, { variant: id, index: badIndex });
    }
    return arr;
  };
  const fullTokens = tokensOf('full');
  const fullSum = fullTokens.reduce((a, b) => a + b, 0);
  const fullParts = sumParts(fullTokens, input.parts);

  const variants: VariantAttribution[] = input.variants.map((v) => {
    const tokens = v.id === 'full' ? fullTokens : tokensOf(v.id);
    const logProb = tokens.reduce((a, b) => a + b, 0);
    const parts = sumParts(tokens, input.parts);
    const rawDelta = fullSum - logProb;
    return {
      id: v.id,
      kind: v.kind,
      tokenLogProbs: tokens,
      logProb,
      rawDelta,
      normalizedDelta: rawDelta / tokenCount,
      parts,
      deltas: {
        whole: rawDelta / tokenCount,
        name: partDelta(fullParts?.name, parts?.name),
        arguments: partDelta(fullParts?.arguments, parts?.arguments),
      },
    };
  });
  const byId = new Map(variants.map((v) => [v.id as string, v]));
  const noUser = byId.get('no-user');
  if (noUser === undefined) throw new InvalidInputError('variants: missing the "no-user" variant; dU is the reference every span is compared with.', { variant: 'no-user' });

  const floor = options.noiseFloor ?? -Infinity;
  const spans: SpanAttribution[] = input.spans.map((span) => {
    const v = byId.get(`no-span:${span.id}`);
    if (v === undefined) throw new InvalidInputError(`variants: missing "no-span:${span.id}" for the span at ${messageRef(span.messageIndex)}.`, { variant: `no-span:${span.id}` });
    const out = options.rule({ user: noUser.deltas, span: v.deltas, tau: options.tau });
    const attribution: SpanAttribution = {
      spanId: span.id,
      messageIndex: span.messageIndex,
      toolName: span.toolName,
      rawDelta: v.rawDelta,
      normalizedDelta: v.normalizedDelta,
      deltas: v.deltas,
      score: out.score,
      flagged: out.flagged && v.normalizedDelta > floor,
    };
    const sentences = byId.get(`no-call-sentences:${span.id}`);
    if (sentences !== undefined) {
      const s = options.rule({ user: noUser.deltas, span: sentences.deltas, tau: options.tau });
      const flagged = s.flagged && sentences.normalizedDelta > floor;
      attribution.callSentences = { rawDelta: sentences.rawDelta, normalizedDelta: sentences.normalizedDelta, deltas: sentences.deltas, score: s.score, flagged };
      attribution.score = Math.max(attribution.score, s.score);
      attribution.flagged ||= flagged;
    }
    return attribution;
  });
  const groupMargin = options.groupMargin ?? 0;
  const dedupFull = byId.get('deduplicated');
  const dedupNoUser = byId.get('deduplicated-no-user');
  const deduplicated = dedupFull && dedupNoUser ? { full: dedupFull, noUser: dedupNoUser } : undefined;
  const groups: GroupAttribution[] = input.variants.flatMap((variant) => {
    if (variant.kind !== 'no-group' || variant.group === undefined) return [];
    const v = byId.get(variant.id)!;
    const members = variant.group.spanIds.map((id) => {
      const span = input.spans.find((s) => s.id === id);
      if (span === undefined) throw new InvalidInputError(`variants: "${variant.id}" names span ${id}, which the context does not hold.`, { variant: variant.id });
      return span;
    });
    // Near-duplicates are judged from the conversation with one copy of each; other groups from the full one.
    const once = variant.group.reasons.includes('duplicate') ? deduplicated : undefined;
    const user = once ? minus(once.noUser.deltas, once.full.deltas) : noUser.deltas;
    const deltas = once ? minus(v.deltas, once.full.deltas) : v.deltas;
    const out = options.rule({ user, span: deltas, tau: options.tau - groupMargin });
    const rawDelta = once ? v.rawDelta - once.full.rawDelta : v.rawDelta;
    return [
      {
        groupId: Number(variant.id.slice('no-group:'.length)),
        spanIds: [...variant.group.spanIds],
        messageIndexes: members.map((m) => m.messageIndex).sort((a, b) => a - b),
        reasons: [...variant.group.reasons],
        baseline: once ? 'deduplicated' : 'full',
        rawDelta,
        normalizedDelta: rawDelta / tokenCount,
        deltas,
        userDeltas: user,
        score: out.score - groupMargin,
        flagged: out.flagged && rawDelta / tokenCount > floor,
      },
    ];
  });
  const flagged = flaggedSpansOf(spans, groups);
  const scores = [...spans.map((s) => s.score), ...groups.map((g) => g.score)];
  return {
    rule: options.ruleName,
    tau: options.tau,
    userWeight: options.userWeight ?? null,
    actionTokenCount: tokenCount,
    partTokenCounts: fullParts === null ? null : { name: fullParts.name.tokenCount, arguments: fullParts.arguments.tokenCount, other: fullParts.other.tokenCount },
    logProbFull: fullSum,
    logProbNoUser: noUser.logProb,
    user: { rawDelta: noUser.rawDelta, normalizedDelta: noUser.normalizedDelta, deltas: noUser.deltas },
    spans,
    groups,
    groupMargin,
    variants,
    flagged,
    detected: flagged.length > 0,
    score: spans.length === 0 ? null : Math.max(...scores),
  };
}

/** The spans a verdict names: each flagged span, and the members of each flagged group (with its id), by span id. */
export function flaggedSpansOf(spans: readonly SpanAttribution[], groups: readonly GroupAttribution[]): FlaggedSpan[] {
  const flagged: FlaggedSpan[] = spans.filter((s) => s.flagged).map((s) => ({ spanId: s.spanId, messageIndex: s.messageIndex, toolName: s.toolName }));
  for (const g of groups.filter((x) => x.flagged)) {
    for (const id of g.spanIds) {
      const span = spans.find((s) => s.spanId === id)!;
      if (!flagged.some((f) => f.spanId === id)) flagged.push({ spanId: id, messageIndex: span.messageIndex, toolName: span.toolName, groupId: g.groupId });
    }
  }
  return flagged.sort((a, b) => a.spanId - b.spanId);
}

/** computeAttribution with the rule, tau and rule name taken from resolved options. */
export function attributeWithOptions(
  input: AttributionInput,
  options: Pick<ResolvedGuardOptions, 'rule' | 'edgearmorRule' | 'tau' | 'userWeight' | 'groupMargin' | 'noiseFloor'>,
): AttributionResult {
  const userWeight = options.rule === 'causalarmor' ? options.userWeight : null;
  return computeAttribution(input, { tau: options.tau, rule: ruleFromOptions(options), ruleName: options.rule, userWeight, groupMargin: options.groupMargin, noiseFloor: options.noiseFloor });
}
