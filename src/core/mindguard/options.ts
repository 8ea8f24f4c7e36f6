/**
 * MindGuard's options, declared once with the guard's option builder (core/option-schema.ts): the
 * guard's registry includes this group as `toolPoisoning.mindguard`, and MindGuard used on its own
 * validates with the same schema.
 */
import * as v from 'valibot';
import { MindGuardError } from '../errors.js';
import { compileOptions, formatOptionIssues, group, option, type OptionsInput, type OptionsResolved } from '../option-schema.js';

const finiteNumber = (allowed: string) => v.pipe(v.number(allowed), v.finite(allowed));
const positive = v.pipe(finiteNumber('a finite number > 0'), v.gtValue(0, 'a finite number > 0'));
const integerFrom0 = (allowed: string) => v.pipe(v.number(allowed), v.integer(allowed), v.minValue(0, allowed));

/** MindGuard's options: the paper's values where it gives them (reference/mindguard.md). */
export const MINDGUARD_OPTIONS = group(
  {
    sigmaFraction: option(positive, 1 / 6, {
      defaultText: '`1/6`',
      summary: 'width of the Gaussian layer weighting as a fraction of the layer count (the paper gives none; the public re-implementation uses 1/6)',
    }),
    sigmaLayers: option(v.nullable(positive), null, { summary: 'absolute Gaussian width in layers; overrides sigmaFraction', defaultText: 'sigmaFraction decides' }),
    headPooling: option(v.picklist(['mean', 'max', 'sum'], 'one of "mean", "max", "sum"'), 'mean', { summary: 'how the heads of a layer are pooled before the layer weighting' }),
    sinkTopK: option(integerFrom0('an integer >= 0 (0 disables the sink filter)'), 80, { summary: 'sink filter: columns with the most received attention that are sink candidates (paper: 80)' }),
    sinkEntropyThreshold: option(v.pipe(finiteNumber('a number in [0, 1] (normalised entropy)'), v.minValue(0, 'a number in [0, 1] (normalised entropy)'), v.maxValue(1, 'a number in [0, 1] (normalised entropy)')), 0.85, {
      summary: 'sink filter: a candidate column whose normalised entropy exceeds this is zeroed (paper: 0.85)',
    }),
    airThreshold: option(v.pipe(finiteNumber('a finite number >= 0'), v.minValue(0, 'a finite number >= 0')), 0.5, {
      summary: 'a call is flagged when any tool\'s attention influence ratio is above this (paper: 0.5)',
    }),
    heatmapMaxColumns: option(integerFrom0('an integer >= 0'), 0, { summary: 'leading columns of each attention row copied into the heatmap; 0 leaves raw rows out' }),
  },
  "MindGuard's decision-dependence graph and its thresholds",
);

/** How the attention heads of one layer are pooled into a single map. */
export type HeadPooling = 'mean' | 'max' | 'sum';

/** User-facing MindGuard options; every field is optional. */
export type MindGuardOptions = OptionsInput<typeof MINDGUARD_OPTIONS>;

/** MindGuard options after defaults and validation; a plain object that survives structuredClone. */
export type ResolvedMindGuardOptions = OptionsResolved<typeof MINDGUARD_OPTIONS>;

const compiled = compileOptions(MINDGUARD_OPTIONS);

/** The defaults, with their sources on {@link MINDGUARD_OPTIONS}. */
export const DEFAULT_MINDGUARD_OPTIONS: ResolvedMindGuardOptions = compiled.defaults;

/** Fills in defaults and validates; never mutates its input, throws MindGuardError('invalid-options') naming every problem. */
export function resolveMindGuardOptions(options: MindGuardOptions = {}): ResolvedMindGuardOptions {
  const result = compiled.parse(options);
  if (result.ok) return result.value;
  const [first] = result.issues;
  throw new MindGuardError('invalid-options', formatOptionIssues(result.issues), { option: first!.path, received: first!.received, allowed: first!.allowed, issues: result.issues.map((i) => ({ ...i })) });
}
