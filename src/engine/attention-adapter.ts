/**
 * Attention from standard decoder exports, so MindGuard works on hub models.
 *
 * A decoder exported with explicit attention (MatMul, Softmax, MatMul per layer) computes the
 * attention rows MindGuard needs but does not output them. The adapter reads the graph's nodes and
 * outputs, finds the one Softmax per layer, and adds what EdgeArmor's own export has: an int64
 * scalar input `num_attention_rows` and outputs `attentions.N`, the softmax rows of the last R query
 * positions, [batch, heads, R, keys].
 *
 * The original bytes are never re-encoded (a reader of a few fields would drop the others): the
 * additions are encoded as a second `graph` field appended to the ModelProto, which protobuf parsers
 * merge into the first, appending nodes, inputs, outputs and initializers. Fused attention kernels
 * (GroupQueryAttention, MultiHeadAttention...) keep their softmax inside one op; such models are
 * reported as having no attention and MindGuard falls back.
 *
 * The wire format goes through protobufjs's Reader and Writer, with message codecs written the way
 * pbjs's static modules are: protobufjs's reflection builds its codecs with `new Function`, which
 * extension pages' CSP (no 'unsafe-eval') forbids. Field numbers are onnx.proto's (checked against
 * the onnx Python package's descriptors).
 */
import protobuf from 'protobufjs/minimal.js';

const { Reader, Writer } = protobuf;
type ProtoReader = protobuf.Reader;
type ProtoWriter = protobuf.Writer;

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

/** TensorProto.DataType INT64. */
const INT64 = 7;
const ROWS_INPUT = 'num_attention_rows';
const MIN_OPSET = 13;

/** The adapted model; or why its attention cannot be exposed (`native`: it outputs attention already). */
export type AttentionAdaptation = { ok: true; model: Uint8Array; layers: number } | { ok: false; reason: string; native?: true };

const LEN = 2;
const VARINT = 0;

interface NodeProto {
  input: string[];
  output: string[];
  name?: string;
  op_type?: string;
  domain?: string;
}
interface ValueInfoProto {
  name: string;
  /** TypeProto.tensor_type; only elem_type is read. */
  elemType?: number;
  /** Written only: TensorShapeProto dims, as dim_param names ([] for a scalar). */
  dims?: string[];
}
interface GraphProto {
  node: NodeProto[];
  input: ValueInfoProto[];
  output: ValueInfoProto[];
}
interface ModelProto {
  graph?: GraphProto;
  opset: Array<{ domain: string; version: number }>;
}

/** Reads the fields of a length-delimited message, skipping the others. */
function readMessage(r: ProtoReader, length: number, field: (tag: number, wire: number) => boolean): void {
  const end = r.pos + length;
  while (r.pos < end) {
    const tag = r.uint32();
    if (!field(tag >>> 3, tag & 7)) r.skipType(tag & 7);
  }
}

function readNode(r: ProtoReader, length: number): NodeProto {
  const n: NodeProto = { input: [], output: [] };
  readMessage(r, length, (f, w) => {
    if (w !== LEN) return false;
    if (f === 1) n.input.push(r.string());
    else if (f === 2) n.output.push(r.string());
    else if (f === 3) n.name = r.string();
    else if (f === 4) n.op_type = r.string();
    else if (f === 7) n.domain = r.string();
    else return false;
    return true;
  });
  return n;
}

function readValueInfo(r: ProtoReader, length: number): ValueInfoProto {
  const v: ValueInfoProto = { name: '' };
  readMessage(r, length, (f, w) => {
    if (f === 1 && w === LEN) v.name = r.string();
    // type (TypeProto) -> tensor_type (1) -> elem_type (1)
    else if (f === 2 && w === LEN)
      readMessage(r, r.uint32(), (tf, tw) => {
        if (tf !== 1 || tw !== LEN) return false;
        readMessage(r, r.uint32(), (ef, ew) => (ef === 1 && ew === VARINT ? ((v.elemType = r.int32()), true) : false));
        return true;
      });
    else return false;
    return true;
  });
  return v;
}

function readModel(bytes: Uint8Array): ModelProto {
  const r = Reader.create(bytes);
  const model: ModelProto = { opset: [] };
  readMessage(r, bytes.byteLength, (f, w) => {
    if (f === 7 && w === LEN) {
      const g: GraphProto = model.graph ?? { node: [], input: [], output: [] };
      readMessage(r, r.uint32(), (gf, gw) => {
        if (gw !== LEN) return false;
        if (gf === 1) g.node.push(readNode(r, r.uint32()));
        else if (gf === 11) g.input.push(readValueInfo(r, r.uint32()));
        else if (gf === 12) g.output.push(readValueInfo(r, r.uint32()));
        else return false;
        return true;
      });
      model.graph = g;
    } else if (f === 8 && w === LEN) {
      const o = { domain: '', version: 0 };
      readMessage(r, r.uint32(), (of, ow) => {
        if (of === 1 && ow === LEN) o.domain = r.string();
        else if (of === 2 && ow === VARINT) o.version = Number(r.int64());
        else return false;
        return true;
      });
      model.opset.push(o);
    } else return false;
    return true;
  });
  return model;
}

const tag = (w: ProtoWriter, field: number, wire: number) => w.uint32((field << 3) | wire);

function writeValueInfo(w: ProtoWriter, v: ValueInfoProto): void {
  tag(w, 1, LEN).string(v.name);
  tag(w, 2, LEN).fork(); // TypeProto
  tag(w, 1, LEN).fork(); // tensor_type
  tag(w, 1, VARINT).int32(v.elemType ?? 0);
  tag(w, 2, LEN).fork(); // shape
  for (const d of v.dims ?? []) {
    tag(w, 1, LEN).fork();
    tag(w, 2, LEN).string(d);
    w.ldelim();
  }
  w.ldelim().ldelim().ldelim();
}

/** Graph elements to append. */
export interface GraphAddition {
  node?: NodeProto[];
  input?: ValueInfoProto[];
  output?: ValueInfoProto[];
  /** int64 initializers. */
  initializer?: Array<{ name: string; dims: number[]; values: number[] }>;
}

/** Appends nodes, inputs, outputs and int64 initializers to a model's graph without re-encoding its bytes. */
export function appendToGraph(model: Uint8Array, addition: GraphAddition): Uint8Array {
  const w = Writer.create();
  tag(w, 7, LEN).fork();
  for (const n of addition.node ?? []) {
    tag(w, 1, LEN).fork();
    for (const i of n.input) tag(w, 1, LEN).string(i);
    for (const o of n.output) tag(w, 2, LEN).string(o);
    if (n.name) tag(w, 3, LEN).string(n.name);
    tag(w, 4, LEN).string(n.op_type ?? '');
    if (n.domain) tag(w, 7, LEN).string(n.domain);
    w.ldelim();
  }
  for (const t of addition.initializer ?? []) {
    tag(w, 5, LEN).fork(); // TensorProto
    for (const d of t.dims) tag(w, 1, VARINT).int64(d);
    tag(w, 2, VARINT).int32(INT64);
    for (const v of t.values) tag(w, 7, VARINT).int64(v);
    tag(w, 8, LEN).string(t.name);
    w.ldelim();
  }
  for (const v of addition.input ?? []) {
    tag(w, 11, LEN).fork();
    writeValueInfo(w, v);
    w.ldelim();
  }
  for (const v of addition.output ?? []) {
    tag(w, 12, LEN).fork();
    writeValueInfo(w, v);
    w.ldelim();
  }
  w.ldelim();
  const bytes = w.finish();
  const out = new Uint8Array(model.byteLength + bytes.byteLength);
  out.set(model, 0);
  out.set(bytes, model.byteLength);
  return out;
}

/** Adds `num_attention_rows` and `attentions.N` outputs to a standard decoder export with explicit attention. */
export function exposeAttention(model: Uint8Array, numLayers: number): AttentionAdaptation {
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
  if (fused) return { ok: false, reason: `fused attention (${fused.op_type}) computes its softmax inside one kernel, so no attention rows can be read` };
  const opset = decoded.opset.find((o) => o.domain === '' || o.domain === 'ai.onnx')?.version ?? 0;
  if (opset < MIN_OPSET) return { ok: false, reason: `opset ${opset} is older than ${MIN_OPSET}` };
  const softmaxes = graph.node.filter((n) => n.op_type === 'Softmax' && (n.domain ?? '') === '');
  if (softmaxes.length !== numLayers) {
    return { ok: false, reason: `found ${softmaxes.length} Softmax nodes for ${numLayers} layers, so the attention of each layer cannot be told apart` };
  }
  const elemType = graph.output.find((o) => o.name === 'logits')?.elemType;
  if (elemType === undefined) return { ok: false, reason: 'the model has no typed "logits" output' };

  const c = (name: string) => `edgearmor/${name}`;
  const node: NodeProto[] = [];
  const output: ValueInfoProto[] = [];
  softmaxes.forEach((s, l) => {
    const p = s.output[0]!;
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
    ok: true,
    layers: numLayers,
    model: appendToGraph(model, {
      node,
      output,
      input: [{ name: ROWS_INPUT, elemType: INT64, dims: [] }],
      initializer: [
        { name: c('two'), dims: [], values: [2] },
        { name: c('shape1'), dims: [1], values: [1] },
        { name: c('end'), dims: [1], values: [2 ** 31 - 1] },
        { name: c('axis2'), dims: [1], values: [2] },
      ],
    }),
  };
}

const adapted = new Map<string, AttentionAdaptation>();

/**
 * {@link exposeAttention}, done once per model file in this process (worker or Node) and kept by
 * the file's SHA-256: reading the graph takes ~10-20 ms on the fixtures, so it is not persisted.
 */
export function exposeAttentionCached(model: Uint8Array, sha256: string, numLayers: number): AttentionAdaptation {
  const key = `${sha256}:${numLayers}`;
  let result = adapted.get(key);
  if (!result) adapted.set(key, (result = exposeAttention(model, numLayers)));
  return result;
}
