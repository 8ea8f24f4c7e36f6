/**
 * Logits only where they are read: `num_logits_to_keep` for standard decoder exports.
 *
 * Hub exports (onnx-community, Optimum, onnxruntime-genai) return logits for every position, so a pass over
 * S tokens computes and returns S x vocabulary floats (150k-260k columns for Qwen, Llama 3, Gemma) although
 * the scorers read only the last few rows. The adapter gives such a graph what EdgeArmor's export has
 * (model/export_onnx.py): an int64 scalar input `num_logits_to_keep`, logits of the last K positions only,
 * all of them when K is 0 or at least the sequence. It inserts, before the LM head, a Slice over the
 * sequence axis starting at -K (Slice clamps -K below the start to the start, and -0 is 0: every position).
 *
 * The LM head is found from the `logits` output back: through Casts (fp16 exports widen logits to float32)
 * and Adds of a constant bias, to a MatMul or MatMulNBits whose weights are constant (an initializer, or
 * computed from initializers only: a tied embedding's Transpose, a DequantizeLinear, a Cast). Such a head
 * maps each position on its own, so slicing its input rows slices its output rows and nothing else changes;
 * `logits` must be declared rank 3, [batch, sequence, vocabulary], which makes the head's input
 * [batch, sequence, hidden] (MatMul keeps the rank of its input with a 2-D weight). Anything else is left
 * as it is, with the reason, and the scorers size their passes by every position's logits.
 */
import { appendToGraph, defaultOpset, INT64, readModel, spliceNodeInputs, type GraphProto, type ModelProto, type NodeProto, type ReadNode } from './onnx-proto.js';

/** The input the adapter adds, as EdgeArmor's export names it. */
export const KEEP_INPUT = 'num_logits_to_keep';

/** LM head ops whose output row i depends on input row i alone (weights constant). */
const HEAD_OPS: ReadonlyArray<{ op: string; domain: string }> = [
  { op: 'MatMul', domain: '' },
  { op: 'MatMulNBits', domain: 'com.microsoft' },
];

/** Ops between the head and `logits` that map each element on its own. */
const ELEMENTWISE_OPS = ['Cast', 'Identity'];

const MIN_OPSET = 13;

/** The adapted model and its head node; or why logits cannot be limited (`native`: the model has num_logits_to_keep already). */
export type LogitsAdaptation = { ok: true; model: Uint8Array; head: string } | { ok: false; reason: string; native?: true };

/** Whether a tensor is constant: an initializer, a Constant's output, or computed from constants only. */
function constantTensors(graph: GraphProto, producer: ReadonlyMap<string, NodeProto>): (name: string) => boolean {
  const initializers = new Set(graph.initializer.map((t) => t.name));
  const inputs = new Set(graph.input.map((t) => t.name));
  const memo = new Map<string, boolean>();
  const visit = (name: string, depth: number): boolean => {
    if (name === '') return true; // an omitted optional input
    const known = memo.get(name);
    if (known !== undefined) return known;
    let result: boolean;
    // An initializer that is also a graph input can be overridden by a feed: not constant.
    if (initializers.has(name)) result = !inputs.has(name);
    else {
      const node = producer.get(name);
      // Ops without inputs other than Constant (RandomNormal...) are not constant; deep chains are not weights.
      result =
        node !== undefined &&
        depth < 64 &&
        ((node.op_type === 'Constant' && (node.domain ?? '') === '') || (node.input.length > 0 && !node.op_type?.startsWith('Random') && node.input.every((i) => visit(i, depth + 1))));
    }
    memo.set(name, result);
    return result;
  };
  return (name) => visit(name, 0);
}

/** Finds the LM head of a decoder graph: the node whose input rows map to `logits` rows one to one, or why there is none. */
export function findLmHead(model: ModelProto): { head: ReadNode } | { reason: string } {
  const graph = model.graph;
  if (!graph) return { reason: 'the model has no graph' };
  const logits = graph.output.find((o) => o.name === 'logits');
  if (!logits) return { reason: 'the model has no "logits" output' };
  if (logits.rank !== 3) return { reason: `the "logits" output is declared with ${logits.rank === undefined ? 'no shape' : `rank ${logits.rank}`}, not [batch, sequence, vocabulary]` };
  const producer = new Map<string, ReadNode>();
  for (const n of graph.node) {
    for (const o of n.output) {
      // '' names a skipped optional output (onnx's convention), not a tensor: fused norms skip theirs.
      if (o === '') continue;
      if (producer.has(o)) return { reason: `the tensor "${o}" is produced by two nodes` };
      producer.set(o, n);
    }
  }
  const constant = constantTensors(graph, producer);
  let name = 'logits';
  // Tensors between the head and `logits`: they change shape with the rewrite, so nothing else may read them.
  const path: string[] = [];
  for (let step = 0; step < 16; step++) {
    if (name !== 'logits') path.push(name);
    const node = producer.get(name);
    if (!node) return { reason: `"${name}" on the way from "logits" to the LM head is not computed by a node` };
    const op = node.op_type ?? '';
    const domain = node.domain ?? '';
    if (domain === '' && ELEMENTWISE_OPS.includes(op)) {
      name = node.input[0]!;
      continue;
    }
    // A bias: Add of the head's output and a constant.
    if (domain === '' && op === 'Add' && node.input.length === 2) {
      const varying = node.input.filter((i) => !constant(i));
      if (varying.length !== 1) return { reason: `the Add node "${node.name ?? ''}" before "logits" does not add a constant bias` };
      name = varying[0]!;
      continue;
    }
    if (!HEAD_OPS.some((h) => h.op === op && h.domain === domain)) {
      return { reason: `the node computing "logits" is ${domain === '' ? '' : `${domain}.`}${op} ("${node.name ?? ''}"), not a MatMul or MatMulNBits LM head` };
    }
    const [activations, ...weights] = node.input;
    if (activations === undefined || constant(activations)) return { reason: `the LM head "${node.name ?? ''}" has no hidden-state input` };
    if (!weights.every(constant)) return { reason: `the LM head "${node.name ?? ''}" has weights that are not constant (computed from the graph's inputs, or initializers a feed may override), so its rows cannot be told apart` };
    const shared = path.find((t) => graph.output.some((o) => o.name === t) || graph.node.filter((n) => n.input.includes(t)).length > 1);
    if (shared !== undefined) return { reason: `"${shared}", between the LM head and "logits", is also read elsewhere` };
    return { head: node };
  }
  return { reason: 'no LM head within 16 nodes of "logits"' };
}

/** Adds `num_logits_to_keep` to a standard decoder export: the LM head runs on the last K positions only. */
export function keepLogits(model: Uint8Array): LogitsAdaptation {
  let decoded: ModelProto;
  try {
    decoded = readModel(model);
  } catch (e) {
    return { ok: false, reason: `the model is not a readable ONNX ModelProto (${(e as Error).message})` };
  }
  if (decoded.graph?.input.some((i) => i.name === KEEP_INPUT)) return { ok: false, reason: `the model has a ${KEEP_INPUT} input already`, native: true };
  const opset = defaultOpset(decoded);
  if (opset < MIN_OPSET) return { ok: false, reason: `opset ${opset} is older than ${MIN_OPSET}` };
  const found = findLmHead(decoded);
  if ('reason' in found) return { ok: false, reason: found.reason };
  const { head } = found;
  const c = (name: string) => `edgearmor/logits/${name}`;
  const [hidden, ...weights] = head.input as [string, ...string[]];
  // starts = [-K] along axis 1: the last K positions, every position when K is 0 or exceeds the sequence.
  const rewired = spliceNodeInputs(model, decoded, head, [c('kept'), ...weights]);
  return {
    ok: true,
    head: head.name ?? head.output[0]!,
    model: appendToGraph(rewired, {
      node: [
        { op_type: 'Neg', input: [KEEP_INPUT], output: [c('negative')], name: c('Neg') },
        { op_type: 'Reshape', input: [c('negative'), c('shape1')], output: [c('starts')], name: c('Reshape') },
        { op_type: 'Slice', input: [hidden, c('starts'), c('end'), c('axis1')], output: [c('kept')], name: c('Slice') },
      ],
      input: [{ name: KEEP_INPUT, elemType: INT64, dims: [] }],
      initializer: [
        { name: c('shape1'), dims: [1], values: [1] },
        { name: c('end'), dims: [1], values: [2 ** 31 - 1] },
        { name: c('axis1'), dims: [1], values: [1] },
      ],
    }),
  };
}
