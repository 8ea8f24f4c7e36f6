/** Shape of an attention tensor laid out [layers][heads][rows][cols], row-major. */
export interface AttentionDims {
  readonly layers: number;
  readonly heads: number;
  /** Generated action tokens (the tool-call tokens, in order). */
  readonly rows: number;
  /** Every position of the context+action sequence the rows attend to. */
  readonly cols: number;
}

/** Half-open token index range [start, end). */
export interface TokenRange {
  readonly start: number;
  readonly end: number;
}

/** One registered tool's description-and-schema block, in column coordinates. */
export interface ToolSpan {
  readonly tool: string;
  readonly ranges: readonly TokenRange[];
}

/** Token spans of the MindGuard vertices: sources in column coordinates, targets in row coordinates. */
export interface MindGuardSpans {
  /** All user messages (v_u). */
  readonly user: readonly TokenRange[];
  /** One entry per registered tool (v_t); names must be unique. */
  readonly tools: readonly ToolSpan[];
  /** Earlier tool results (v_r): drawn in the graph, not scored by AIR (as in the paper). */
  readonly toolResults?: readonly (readonly TokenRange[])[];
  /** Name of the tool the action invokes; it need not be registered. */
  readonly invokedTool: string;
  /** Control-flow target: rows from the start of the call up to and including the tool name. */
  readonly controlTarget: readonly TokenRange[];
  /** Data-flow target: rows of the argument value tokens; empty for a call without arguments. */
  readonly dataTarget: readonly TokenRange[];
}

/** Kind of a decision-dependence-graph vertex. */
export type DdgNodeKind = 'user' | 'tool' | 'invoked-tool' | 'tool-result' | 'target-control' | 'target-data';

/** Which decision a target vertex stands for: tool choice (A1) or argument values (A2). */
export type FlowKind = 'control' | 'data';

/** A decision-dependence-graph vertex. */
export interface DdgNode {
  readonly id: string;
  readonly kind: DdgNodeKind;
  readonly label: string;
  readonly tokenCount: number;
}

/** A weighted source-to-target edge; weight is the Total Attention Energy. */
export interface DdgEdge {
  readonly source: string;
  readonly target: string;
  readonly weight: number;
}

/** One action token's row for the demo heatmap. */
export interface HeatmapRow {
  /** Row index among the generated action tokens. */
  readonly row: number;
  /** The target this row belongs to, or null for call tokens in neither (e.g. JSON punctuation between name and arguments). */
  readonly target: FlowKind | null;
  /** Filtered aggregated attention summed over each source vertex's columns, in `Heatmap.sources` order. */
  readonly bySource: readonly number[];
  /** The first `heatmapMaxColumns` columns of the filtered aggregated row; absent when that option is 0. */
  readonly columns?: readonly number[];
}

/** Per-action-token attention per source vertex, ready to draw. */
export interface Heatmap {
  /** Source node ids, the column order of every `bySource`. */
  readonly sources: readonly string[];
  readonly rows: readonly HeatmapRow[];
  /** True when `columns` holds fewer columns than the attention has. */
  readonly truncated: boolean;
}

/** What the sink filter did, for diagnostics and golden tests. */
export interface SinkFilterReport {
  /** Stage-1 candidate columns, largest received attention first. */
  readonly candidates: readonly number[];
  /** Normalised entropy of each candidate, same order as `candidates`. */
  readonly candidateEntropies: readonly number[];
  /** Candidate columns zeroed as sinks, ascending. */
  readonly zeroed: readonly number[];
}

/** The decision-dependence graph built from one tool call's attention. */
export interface Ddg {
  readonly nodes: readonly DdgNode[];
  readonly edges: readonly DdgEdge[];
  readonly heatmap: Heatmap;
  /** Node id of the invoked tool's description vertex, or null when the invoked tool is not registered. */
  readonly invokedToolNode: string | null;
  /** Normalised Gaussian layer weights actually applied (sum 1). */
  readonly layerWeights: readonly number[];
  readonly sinkFilter: SinkFilterReport;
}

/** AIR of one uninvoked tool into one target. */
export interface AirScore {
  readonly tool: string;
  readonly flow: FlowKind;
  /** w(tool -> target) / (w(user -> target) + w(invoked tool -> target)); Infinity when only the numerator is > 0. */
  readonly air: number;
  readonly numerator: number;
  readonly denominator: number;
}

/** MindGuard's decision for one tool call, with the graph it was made from. */
export interface MindGuardVerdict {
  readonly detected: boolean;
  /** Source tool of the largest AIR above the threshold, or null when nothing is flagged. */
  readonly poisonedTool: string | null;
  /** Flow of that largest offending AIR: 'control' (hijacked tool choice, A1) or 'data' (manipulated arguments, A2). */
  readonly flow: FlowKind | null;
  /** Continuous score: the largest AIR over all uninvoked tools and targets (0 when there are none). */
  readonly score: number;
  readonly threshold: number;
  readonly air: readonly AirScore[];
  readonly nodes: readonly DdgNode[];
  readonly edges: readonly DdgEdge[];
  readonly heatmap: Heatmap;
}
