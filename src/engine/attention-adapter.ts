/**
 * Attention from standard decoder exports, so MindGuard works on hub models.
 *
 * A decoder exported with explicit attention (MatMul, Softmax, MatMul per layer) computes the
 * attention rows MindGuard needs but does not output them. The adapter reads the graph's nodes and
 * outputs, finds the one Softmax per layer, and adds what EdgeArmor's own export has: an int64
 * scalar input `num_attention_rows` and outputs `attentions.N`, the softmax rows of the last R query
 * positions, [batch, heads, R, keys].
 *
 * The additions are appended to the graph (onnx-proto.ts: the original bytes are kept as they are). Fused
 * attention kernels (GroupQueryAttention, MultiHeadAttention...) keep their softmax inside one op;
 * GroupQueryAttention can output it (qk_output, gqa-attention.ts) where the caller allows that route, other
 * such models are reported as having no attention and MindGuard falls back.
 */
import { exposeGroupQueryAttention } from './gqa-attention.js';
import { appendToGraph, defaultOpset, INT64, readModel, type GraphAddition, type ModelProto, type NodeProto, type ValueInfoProto } from './onnx-proto.js';

export { appendToGraph, type GraphAddition } from './onnx-proto.js';

/** Ops that compute attention inside one kernel, so no softmax output exists to expose. */
export const FUSED_ATTENTION_OPS: readonly string[] = [
  'GroupQueryAttention',
  'MultiHeadAttention',
  'Attention',
  'PackedAttention',
  'PackedMultiHeadAttention',
  'DecoderMaskedMultiHeadAttention',
  'SparseAttention',
];

const ROWS_INPUT = 'num_attention_rows';
const MIN_OPSET = 13;

/** The adapted model; or why its attention cannot be exposed (`native`: it outputs attention already). */
export type AttentionAdaptation = { ok: true; model: Uint8Array; layers: number } | { ok: false; reason: string; native?: true };

/** Options for {@link exposeAttention}. */
export interface ExposeAttentionOptions {
  /**
   * Read GroupQueryAttention's own softmax output (qk_output, gqa-attention.ts): checked on onnxruntime's CPU
   * kernel (onnxruntime-node and wasm). @defaultValue false
   */
  groupQueryAttention?: boolean;
}

/**
 * Adds `num_attention_rows` and `attentions.N` outputs to a standard decoder export with explicit attention
 * (or, when allowed, to a GroupQueryAttention graph).
 */
export function exposeAttention(model: Uint8Array, numLayers: number, options: ExposeAttentionOptions = {}): AttentionAdaptation {
  let decoded: ModelProto;
  try {
    decoded = readModel(model);
  } catch (e) {
    return { ok: false, reason: `the model is not a readable ONNX ModelProto (${(e as Error).message})` };
  }
  const graph = decoded.graph;
  if (!graph) return { ok: false, reason: 'the model has no graph' };
  if (graph.output.some((o) => o.name.startsWith('attentions.'))) return { ok: false, reason: 'the model already outputs attentions', native: true };
  const fused = graph.node.find((n) => FUSED_ATTENTION_OPS.includes(n.op_type ?? ''));
  const gqaRoute = fused?.op_type === 'GroupQueryAttention' && options.groupQueryAttention === true;
  if (fused && !gqaRoute) return { ok: false, reason: `fused attention (${fused.op_type}) computes its softmax inside one kernel, so no attention rows can be read` };
  const opset = defaultOpset(decoded);
  if (opset < MIN_OPSET) return { ok: false, reason: `opset ${opset} is older than ${MIN_OPSET}` };
  let base = model;
  let probabilities: string[];
  // A float16 export computes its softmax in float32 where transformers does (a Cast before it); else in the logits' type.
  let softmaxType: number | undefined;
  if (gqaRoute) {
    const gqa = exposeGroupQueryAttention(model, numLayers);
    if (!gqa.ok) return gqa;
    ({ model: base, probabilities } = gqa);
  } else {
    const softmaxes = graph.node.filter((n) => n.op_type === 'Softmax' && (n.domain ?? '') === '');
    if (softmaxes.length !== numLayers) {
      return { ok: false, reason: `found ${softmaxes.length} Softmax nodes for ${numLayers} layers, so the attention of each layer cannot be told apart` };
    }
    probabilities = softmaxes.map((s) => s.output[0]!);
    softmaxType = softmaxInputType(graph.node, softmaxes[0]!);
  }
  const elemType = softmaxType ?? graph.output.find((o) => o.name === 'logits')?.elemType;
  if (elemType === undefined) return { ok: false, reason: 'the model has no typed "logits" output' };
  return { ok: true, layers: numLayers, model: appendToGraph(base, attentionRows(probabilities, elemType)) };
}

/** The element type a Softmax computes in when a Cast produces its input (the Cast's `to`), else undefined. */
function softmaxInputType(nodes: readonly NodeProto[], softmax: NodeProto): number | undefined {
  const producer = nodes.find((n) => n.output.includes(softmax.input[0]!));
  return producer?.op_type === 'Cast' ? producer.ints?.['to'] : undefined;
}

/**
 * The graph addition exposing the last `num_attention_rows` query rows of each layer's attention
 * probabilities [batch, heads, queries, keys] (tensor names in layer order) as `attentions.N`.
 */
function attentionRows(probabilities: readonly string[], elemType: number): GraphAddition {
  const c = (name: string) => `edgearmor/${name}`;
  const node: NodeProto[] = [];
  const output: ValueInfoProto[] = [];
  probabilities.forEach((p, l) => {
    const t = (x: string) => c(`${l}/${x}`);
    // starts = (query positions) - num_attention_rows: the last R rows along axis 2, none when R = 0.
    node.push(
      { op_type: 'Shape', input: [p], output: [t('shape')], name: t('Shape') },
      { op_type: 'Gather', input: [t('shape'), c('two')], output: [t('queries')], name: t('Gather') },
      { op_type: 'Sub', input: [t('queries'), ROWS_INPUT], output: [t('first')], name: t('Sub') },
      { op_type: 'Reshape', input: [t('first'), c('shape1')], output: [t('starts')], name: t('Reshape') },
      { op_type: 'Slice', input: [p, t('starts'), c('end'), c('axis2')], output: [`attentions.${l}`], name: t('Slice') },
    );
    output.push({ name: `attentions.${l}`, elemType, dims: ['batch_size', 'num_heads', 'num_attention_rows', 'total_sequence_length'] });
  });
  return {
    node,
    output,
    input: [{ name: ROWS_INPUT, elemType: INT64, dims: [] }],
    initializer: [
      { name: c('two'), dims: [], values: [2] },
      { name: c('shape1'), dims: [1], values: [1] },
      { name: c('end'), dims: [1], values: [2 ** 31 - 1] },
      { name: c('axis2'), dims: [1], values: [2] },
    ],
  };
}

const adapted = new Map<string, AttentionAdaptation>();

/**
 * {@link exposeAttention}, done once per model file in this process (worker or Node) and kept by
 * the file's SHA-256: reading the graph takes ~10-20 ms on the fixtures, so it is not persisted.
 */
export function exposeAttentionCached(model: Uint8Array, sha256: string, numLayers: number, options: ExposeAttentionOptions = {}): AttentionAdaptation {
  const key = `${sha256}:${numLayers}:${options.groupQueryAttention === true}`;
  let result = adapted.get(key);
  if (!result) adapted.set(key, (result = exposeAttention(model, numLayers, options)));
  return result;
}
