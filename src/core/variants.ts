import type { StructuredContext } from './context.js';
import { untrustedGroups, type GroupReason } from './groups.js';
import { callTerms } from './sentence-cut.js';

/** Identifier of an ablation variant. */
export type VariantId =
  | 'full'
  | 'no-user'
  | `no-span:${number}`
  | `no-call-sentences:${number}`
  | `no-group:${number}`
  | 'deduplicated'
  | 'deduplicated-no-user'
  | `no-tool:${string}`;

/**
 * What a variant removes ('deduplicated': the later copies of near-duplicate results, the baseline duplicate
 * groups are judged against; 'no-call-sentences': the sentences of one long result that name the call).
 */
export type VariantKind = 'full' | 'no-user' | 'no-span' | 'no-call-sentences' | 'no-group' | 'deduplicated' | 'no-tool';

/** One ablated context, as data: which messages are kept (in order) and which tool descriptions are dropped. */
export interface Variant {
  id: VariantId;
  kind: VariantKind;
  /** Indexes into the context's messages that this variant keeps, ascending. */
  keep: number[];
  /** For `no-span` and `no-call-sentences` variants: the span's id. */
  spanId?: number;
  /**
   * For `no-call-sentences` variants: the message whose sentences naming the call (its tool name or an
   * argument value; core/sentence-cut.ts) the scorer removes from the text it scores, every other token kept.
   */
  callSentencesOf?: number;
  /** For `no-group` variants: the member spans' ids and why they were grouped (groups.ts). */
  group?: { spanIds: number[]; reasons: GroupReason[] };
  /** For `no-tool` variants: the tool descriptions left out of the tool list. */
  dropTools?: string[];
}

/** Options of buildVariants. */
export interface VariantOptions {
  /**
   * Also build one variant per tool that drops that tool's description (tool-poisoning leave-one-out).
   * @defaultValue false
   */
  toolLeaveOneOut?: boolean | undefined;
  /**
   * Also build one variant per group of untrusted spans (near-duplicates, results of one tool, all of
   * them; groups.ts) that drops the whole group.
   * @defaultValue false
   */
  groups?: boolean | undefined;
  /**
   * Also build one variant per untrusted result of at least LONG_RESULT_CHARS that names the call, without
   * the sentences that name it: in a long result, filler around an injection lowers the call's
   * log-probability as much as the injection raises it, so removing the whole result moves nothing.
   * @defaultValue false
   */
  callSentences?: boolean | undefined;
}

/** Results at least this long (UTF-16 code units) get a `no-call-sentences` variant when they name the call. */
export const LONG_RESULT_CHARS = 1500;

/** Builds the ablation variants: full, without all of U, without each span, optionally without the call's sentences of each long result, each group of spans and each tool description; ablation deletes messages (or sentences), with no placeholder. */
export function buildVariants(
  context: Pick<StructuredContext, 'messages' | 'userIndices' | 'spans' | 'tools'> & Partial<Pick<StructuredContext, 'action'>>,
  options: VariantOptions = {},
): Variant[] {
  const all = context.messages.map((_, i) => i);
  const users = new Set(context.userIndices);
  const variants: Variant[] = [
    { id: 'full', kind: 'full', keep: all },
    { id: 'no-user', kind: 'no-user', keep: all.filter((i) => !users.has(i)) },
  ];
  for (const span of context.spans) {
    variants.push({ id: `no-span:${span.id}`, kind: 'no-span', keep: all.filter((i) => i !== span.messageIndex), spanId: span.id });
  }
  if (options.callSentences === true && context.action !== undefined) {
    const terms = callTerms(context.action);
    for (const span of context.spans) {
      const text = context.messages[span.messageIndex]!.content;
      if (text.length < LONG_RESULT_CHARS) continue;
      const lower = text.toLowerCase();
      if (!terms.some((t) => lower.includes(t))) continue;
      variants.push({ id: `no-call-sentences:${span.id}`, kind: 'no-call-sentences', keep: [...all], spanId: span.id, callSentencesOf: span.messageIndex });
    }
  }
  if (options.groups === true) {
    const groups = untrustedGroups(context);
    for (const group of groups) {
      const drop = new Set(group.spanIds.map((id) => context.spans[id]!.messageIndex));
      variants.push({ id: `no-group:${group.id}`, kind: 'no-group', keep: all.filter((i) => !drop.has(i)), group: { spanIds: group.spanIds, reasons: group.reasons } });
    }
    // A repeated result is judged as if it had arrived once: the conversation without the later copies is the baseline of duplicate groups.
    const later = new Set(groups.filter((g) => g.reasons.includes('duplicate')).flatMap((g) => g.spanIds.slice(1).map((id) => context.spans[id]!.messageIndex)));
    if (later.size > 0) {
      const once = all.filter((i) => !later.has(i));
      variants.push({ id: 'deduplicated', kind: 'deduplicated', keep: once }, { id: 'deduplicated-no-user', kind: 'deduplicated', keep: once.filter((i) => !users.has(i)) });
    }
  }
  if (options.toolLeaveOneOut === true) {
    for (const tool of context.tools) {
      variants.push({ id: `no-tool:${tool.name}`, kind: 'no-tool', keep: [...all], dropTools: [tool.name] });
    }
  }
  return variants;
}

/** Number of leading messages every variant keeps unchanged (the part a prefix cache can share); tool-list differences are not considered. */
export function sharedPrefixLength(variants: readonly Variant[]): number {
  const first = variants[0];
  if (first === undefined) return 0;
  let n = 0;
  for (;;) {
    const index = first.keep[n];
    if (index === undefined || index !== n) return n;
    if (!variants.every((v) => v.keep[n] === index)) return n;
    n += 1;
  }
}
