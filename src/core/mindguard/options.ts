import { MindGuardError } from './errors.js';

/** How the attention heads of one layer are pooled into a single map. */
export type HeadPooling = 'mean' | 'max' | 'sum';

/** User-facing MindGuard options; every field is optional. */
export interface MindGuardOptions {
  /**
   * Width of the Gaussian layer weighting as a fraction of the layer count L (sigma = fraction * L).
   * The paper gives no value; the one public re-implementation uses L/6.
   * @defaultValue 1/6
   */
  readonly sigmaFraction?: number;
  /**
   * Absolute Gaussian width in layers; when set it overrides `sigmaFraction`.
   * @defaultValue null (use `sigmaFraction`)
   */
  readonly sigmaLayers?: number | null;
  /**
   * How heads are pooled inside each layer before the layer weighting.
   * The paper does not say; mean is the natural default (reference/mindguard.md).
   * @defaultValue 'mean'
   */
  readonly headPooling?: HeadPooling;
  /**
   * Sink filter stage 1: how many columns with the largest received attention are sink candidates.
   * Paper: K = 80, stable for K in 25..200.
   * @defaultValue 80
   */
  readonly sinkTopK?: number;
  /**
   * Sink filter stage 2: a candidate column whose normalised entropy over the rows exceeds this is zeroed.
   * Paper: eps = 0.85, stable for eps > 0.7.
   * @defaultValue 0.85
   */
  readonly sinkEntropyThreshold?: number;
  /**
   * AIR detection threshold tau: a call is flagged when any AIR is strictly greater.
   * Paper sweeps 0.3 / 0.5 / 0.7 / 0.9; 0.5 is its reported operating point (reference/mindguard.md).
   * @defaultValue 0.5
   */
  readonly airThreshold?: number;
  /**
   * Number of leading columns of the filtered, aggregated attention row to copy into each heatmap row; 0 leaves raw rows out.
   * @defaultValue 0
   */
  readonly heatmapMaxColumns?: number;
}

/** MindGuard options after defaults and validation; a plain object that survives structuredClone. */
export interface ResolvedMindGuardOptions {
  readonly sigmaFraction: number;
  readonly sigmaLayers: number | null;
  readonly headPooling: HeadPooling;
  readonly sinkTopK: number;
  readonly sinkEntropyThreshold: number;
  readonly airThreshold: number;
  readonly heatmapMaxColumns: number;
}

/** The defaults, with their sources documented on {@link MindGuardOptions}. */
export const DEFAULT_MINDGUARD_OPTIONS: ResolvedMindGuardOptions = Object.freeze({
  sigmaFraction: 1 / 6,
  sigmaLayers: null,
  headPooling: 'mean',
  sinkTopK: 80,
  sinkEntropyThreshold: 0.85,
  airThreshold: 0.5,
  heatmapMaxColumns: 0,
});

const HEAD_POOLINGS: readonly HeadPooling[] = ['mean', 'max', 'sum'];
const KNOWN_KEYS = new Set<string>(Object.keys(DEFAULT_MINDGUARD_OPTIONS));

function invalid(key: string, received: unknown, allowed: string): never {
  throw new MindGuardError(
    'invalid-options',
    `Invalid MindGuard option ${key}: ${describe(received)}. Should be ${allowed}.`,
    { option: key, received: describe(received), allowed },
  );
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) {
    return String(value);
  }
  return typeof value;
}

function positiveFinite(key: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    invalid(key, value, 'a finite number > 0');
  }
  return value;
}

/** Fills in defaults and validates; never mutates its input, throws MindGuardError('invalid-options') on bad values. */
export function resolveMindGuardOptions(options: MindGuardOptions = {}): ResolvedMindGuardOptions {
  for (const key of Object.keys(options)) {
    if (!KNOWN_KEYS.has(key)) {
      invalid(key, (options as Record<string, unknown>)[key], `one of the known options: ${[...KNOWN_KEYS].join(', ')}`);
    }
  }
  const d = DEFAULT_MINDGUARD_OPTIONS;

  const sigmaFraction = positiveFinite('sigmaFraction', options.sigmaFraction ?? d.sigmaFraction);
  const sigmaLayers =
    options.sigmaLayers === undefined || options.sigmaLayers === null
      ? null
      : positiveFinite('sigmaLayers', options.sigmaLayers);

  const headPooling = options.headPooling ?? d.headPooling;
  if (!HEAD_POOLINGS.includes(headPooling)) {
    invalid('headPooling', headPooling, `one of ${HEAD_POOLINGS.map((p) => `"${p}"`).join(', ')}`);
  }

  const sinkTopK = options.sinkTopK ?? d.sinkTopK;
  if (typeof sinkTopK !== 'number' || !Number.isInteger(sinkTopK) || sinkTopK < 0) {
    invalid('sinkTopK', sinkTopK, 'an integer >= 0 (0 disables the sink filter)');
  }

  const sinkEntropyThreshold = options.sinkEntropyThreshold ?? d.sinkEntropyThreshold;
  if (
    typeof sinkEntropyThreshold !== 'number' ||
    !Number.isFinite(sinkEntropyThreshold) ||
    sinkEntropyThreshold < 0 ||
    sinkEntropyThreshold > 1
  ) {
    invalid('sinkEntropyThreshold', sinkEntropyThreshold, 'a number in [0, 1] (normalised entropy)');
  }

  const airThreshold = options.airThreshold ?? d.airThreshold;
  if (typeof airThreshold !== 'number' || !Number.isFinite(airThreshold) || airThreshold < 0) {
    invalid('airThreshold', airThreshold, 'a finite number >= 0');
  }

  const heatmapMaxColumns = options.heatmapMaxColumns ?? d.heatmapMaxColumns;
  if (typeof heatmapMaxColumns !== 'number' || !Number.isInteger(heatmapMaxColumns) || heatmapMaxColumns < 0) {
    invalid('heatmapMaxColumns', heatmapMaxColumns, 'an integer >= 0');
  }

  return { sigmaFraction, sigmaLayers, headPooling, sinkTopK, sinkEntropyThreshold, airThreshold, heatmapMaxColumns };
}
