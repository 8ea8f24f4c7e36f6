import { MindGuardError } from './errors.js';
import { resolveMindGuardOptions, type MindGuardOptions } from './options.js';
import type { AirScore, Ddg, FlowKind, MindGuardVerdict } from './types.js';

const TARGETS: readonly { readonly id: string; readonly flow: FlowKind }[] = [
  { id: 'target:control', flow: 'control' },
  { id: 'target:data', flow: 'data' },
];

/**
 * AIR(s, t) = w(s -> t) / (w(user -> t) + w(invoked tool -> t)); the invoked tool's term is 0 when it is not
 * registered. A zero denominator gives Infinity when the numerator is > 0 (influence with no legitimate counterweight
 * is maximally anomalous) and 0 when both are 0 (no evidence either way).
 */
export function anomalyInfluenceRatio(numerator: number, denominator: number): number {
  if (denominator > 0) return numerator / denominator;
  return numerator > 0 ? Infinity : 0;
}

/** Scores every uninvoked tool into every present target and returns the verdict with the graph it came from. */
export function mindguardVerdict(ddg: Ddg, options: MindGuardOptions = {}): MindGuardVerdict {
  const o = resolveMindGuardOptions(options);
  const weight = new Map<string, number>();
  for (const e of ddg.edges) weight.set(`${e.source}\u0000${e.target}`, e.weight);
  const w = (source: string, target: string): number => {
    const v = weight.get(`${source}\u0000${target}`);
    if (v === undefined) {
      throw new MindGuardError('invalid-input', `DDG has no edge ${source} -> ${target}; build it with buildDdg.`, {
        source,
        target,
      });
    }
    return v;
  };

  const present = TARGETS.filter((t) => ddg.nodes.some((n) => n.id === t.id));
  const air: AirScore[] = [];
  for (const node of ddg.nodes) {
    if (node.kind !== 'tool') continue;
    for (const t of present) {
      const numerator = w(node.id, t.id);
      const denominator = w('user', t.id) + (ddg.invokedToolNode === null ? 0 : w(ddg.invokedToolNode, t.id));
      air.push({ tool: node.label, flow: t.flow, air: anomalyInfluenceRatio(numerator, denominator), numerator, denominator });
    }
  }

  // The largest offending AIR names the source; on exact ties the earlier tool (registration order), control first.
  let worst: AirScore | null = null;
  for (const a of air) if (worst === null || a.air > worst.air) worst = a;
  const detected = worst !== null && worst.air > o.airThreshold;

  return {
    detected,
    poisonedTool: detected && worst ? worst.tool : null,
    flow: detected && worst ? worst.flow : null,
    score: worst?.air ?? 0,
    threshold: o.airThreshold,
    air,
    nodes: ddg.nodes,
    edges: ddg.edges,
    heatmap: ddg.heatmap,
  };
}
