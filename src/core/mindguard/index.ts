import { buildDdg, type AttentionTensor } from './ddg.js';
import { mindguardVerdict } from './defender.js';
import type { MindGuardOptions } from './options.js';
import type { AttentionDims, MindGuardSpans, MindGuardVerdict } from './types.js';

export * from './errors.js';
export * from './options.js';
export * from './types.js';
export * from './ddg.js';
export * from './defender.js';

/** Builds the decision-dependence graph and returns MindGuard's verdict in one call. */
export function analyzeMindGuard(
  attention: AttentionTensor,
  dims: AttentionDims,
  spans: MindGuardSpans,
  options: MindGuardOptions = {},
): MindGuardVerdict {
  return mindguardVerdict(buildDdg(attention, dims, spans, options), options);
}
