/**
 * Reading and extending ONNX ModelProto bytes, for the graph adapters (attention-adapter.ts, logits-adapter.ts).
 *
 * The original bytes are never re-encoded (a reader of a few fields would drop the others): additions are
 * encoded as a second `graph` field appended to the ModelProto, which protobuf parsers merge into the first,
 * appending nodes, inputs, outputs and initializers; a node whose inputs change is re-encoded alone, its
 * other fields copied byte for byte, and spliced in place of the old one.
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

/** TensorProto.DataType INT64. */
export const INT64 = 7;

const LEN = 2;
const VARINT = 0;

/** Wire types of onnx.proto's fields, for readers of other fields (graph-kind.ts, gqa-attention.ts). */
export const WIRE = { VARINT, FIXED32: 5, LEN } as const;

/** Where a field sits in the model's bytes: from its tag to its end. */
interface ByteSpan {
  start: number;
  end: number;
}

/** The fields of a NodeProto the adapters read. */
export interface NodeProto {
  input: string[];
  output: string[];
  name?: string;
  op_type?: string;
  domain?: string;
  /** Its integer attributes by name (e.g. a Cast's `to`), when it has any. */
  ints?: Record<string, number>;
}

/** A node as read: where its bytes are, so it can be replaced. */
export interface ReadNode extends NodeProto {
  span: ByteSpan;
  /** Which `graph` field of the ModelProto holds it (merged graphs: appended fields follow the first). */
  graph: number;
}

/** The fields of a ValueInfoProto the adapters read or write. */
export interface ValueInfoProto {
  name: string;
  /** TypeProto.tensor_type.elem_type. */
  elemType?: number;
  /** Read only: the number of dims of its shape, when it has one. */
  rank?: number;
  /** Written only: TensorShapeProto dims, as dim_param names ([] for a scalar). */
  dims?: string[];
}

/** The fields of a GraphProto the adapters read. */
export interface GraphProto {
  node: ReadNode[];
  input: ValueInfoProto[];
  output: ValueInfoProto[];
  /** Initializer names and dims (their data is skipped). */
  initializer: Array<{ name: string; dims: number[] }>;
}

/** The fields of a ModelProto the adapters read. */
export interface ModelProto {
  graph?: GraphProto;
  /** The spans of the ModelProto's `graph` fields, in order. */
  graphSpans: ByteSpan[];
  opset: Array<{ domain: string; version: number }>;
}

/** Reads the fields of a length-delimited message, skipping those `field` does not take (it returns false). */
export function readMessage(r: ProtoReader, length: number, field: (tag: number, wire: number) => boolean): void {
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
    else if (f === 5) readIntAttribute(r, r.uint32(), n);
    else return false;
    return true;
  });
  return n;
}

/** An AttributeProto's name and integer value (field 3), kept on the node when it has one. */
function readIntAttribute(r: ProtoReader, length: number, n: NodeProto): void {
  let name = '';
  let value: number | undefined;
  readMessage(r, length, (f, w) => {
    if (f === 1 && w === LEN) name = r.string();
    else if (f === 3 && w === 0) value = r.int32();
    else return false;
    return true;
  });
  if (value !== undefined) (n.ints ??= {})[name] = value;
}

function readValueInfo(r: ProtoReader, length: number): ValueInfoProto {
  const v: ValueInfoProto = { name: '' };
  readMessage(r, length, (f, w) => {
    if (f === 1 && w === LEN) v.name = r.string();
    // type (TypeProto) -> tensor_type (1) -> elem_type (1), shape (2) -> dim (1)
    else if (f === 2 && w === LEN)
      readMessage(r, r.uint32(), (tf, tw) => {
        if (tf !== 1 || tw !== LEN) return false;
        readMessage(r, r.uint32(), (ef, ew) => {
          if (ef === 1 && ew === VARINT) v.elemType = r.int32();
          else if (ef === 2 && ew === LEN) {
            v.rank = 0;
            readMessage(r, r.uint32(), (sf, sw) => (sf === 1 && sw === LEN ? ((v.rank! += 1), r.skipType(sw), true) : false));
          } else return false;
          return true;
        });
        return true;
      });
    else return false;
    return true;
  });
  return v;
}

function readInitializer(r: ProtoReader, length: number): { name: string; dims: number[] } {
  const t = { name: '', dims: [] as number[] };
  readMessage(r, length, (f, w) => {
    if (f === 1 && w === VARINT) t.dims.push(Number(r.int64()));
    else if (f === 1 && w === LEN) {
      const end = r.uint32() + r.pos;
      while (r.pos < end) t.dims.push(Number(r.int64()));
    } else if (f === 8 && w === LEN) t.name = r.string();
    else return false;
    return true;
  });
  return t;
}

/** Reads the graph (nodes with their byte spans, inputs, outputs, initializer names) and opsets of a ModelProto. */
export function readModel(bytes: Uint8Array): ModelProto {
  const r = Reader.create(bytes);
  const model: ModelProto = { opset: [], graphSpans: [] };
  readMessage(r, bytes.byteLength, (f, w) => {
    if (f === 7 && w === LEN) {
      const g: GraphProto = model.graph ?? { node: [], input: [], output: [], initializer: [] };
      const graph = model.graphSpans.length;
      const start = r.pos - 1; // field 7's tag is one byte
      readMessage(r, r.uint32(), (gf, gw) => {
        if (gw !== LEN) return false;
        if (gf === 1) {
          const nodeStart = r.pos - 1;
          const node = readNode(r, r.uint32());
          g.node.push({ ...node, span: { start: nodeStart, end: r.pos }, graph });
        } else if (gf === 5) g.initializer.push(readInitializer(r, r.uint32()));
        else if (gf === 11) g.input.push(readValueInfo(r, r.uint32()));
        else if (gf === 12) g.output.push(readValueInfo(r, r.uint32()));
        else return false;
        return true;
      });
      model.graphSpans.push({ start, end: r.pos });
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

/** The model's default-domain opset version (0 when it declares none). */
export function defaultOpset(model: ModelProto): number {
  return model.opset.find((o) => o.domain === '' || o.domain === 'ai.onnx')?.version ?? 0;
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

function writeNode(w: ProtoWriter, n: NodeProto): void {
  for (const i of n.input) tag(w, 1, LEN).string(i);
  for (const o of n.output) tag(w, 2, LEN).string(o);
  if (n.name) tag(w, 3, LEN).string(n.name);
  tag(w, 4, LEN).string(n.op_type ?? '');
  if (n.domain) tag(w, 7, LEN).string(n.domain);
}

/** Graph elements to append. */
export interface GraphAddition {
  node?: NodeProto[];
  input?: ValueInfoProto[];
  output?: ValueInfoProto[];
  /** int64 initializers. */
  initializer?: Array<{ name: string; dims: number[]; values: number[] }>;
}

/**
 * Appends nodes, inputs, outputs and int64 initializers to a model's graph without re-encoding its bytes. The model
 * may be given in parts (views of other buffers, as {@link spliceNodeInputs} returns), joined in the one copy made.
 */
export function appendToGraph(model: Uint8Array | readonly Uint8Array[], addition: GraphAddition): Uint8Array {
  const w = Writer.create();
  tag(w, 7, LEN).fork();
  for (const n of addition.node ?? []) {
    tag(w, 1, LEN).fork();
    writeNode(w, n);
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
  return concat([...(model instanceof Uint8Array ? [model] : model), w.finish()]);
}

/** The parts joined into one array. */
export function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((a, p) => a + p.byteLength, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

/** A varint's bytes. */
function varint(n: number): Uint8Array {
  return Writer.create().uint32(n).finish();
}

/**
 * The model with one node's inputs replaced, as parts to join (views of `bytes` around the changed node, so a large
 * model is not copied here): the node is re-encoded with its other fields (attributes, doc string...) copied byte
 * for byte, and the graph field that holds it gets its new length; nothing else changes.
 */
export function spliceNodeInputs(bytes: Uint8Array, model: ModelProto, node: ReadNode, inputs: readonly string[]): Uint8Array[] {
  const r = Reader.create(bytes);
  r.pos = node.span.start + 1; // the node field's tag is one byte
  const parts: Uint8Array[] = [];
  let inputsWritten = false;
  readMessage(r, r.uint32(), (f, w) => {
    const fieldStart = r.pos - varint((f << 3) | w).byteLength;
    r.skipType(w);
    if (f !== 1 || w !== LEN) parts.push(bytes.subarray(fieldStart, r.pos));
    // The new inputs go where the first old one was (ONNX writes them first); other fields keep their order and bytes.
    else if (!inputsWritten) {
      const ins = Writer.create();
      for (const i of inputs) tag(ins, 1, LEN).string(i);
      parts.push(ins.finish());
      inputsWritten = true;
    }
    return true;
  });
  const body = concat(parts);
  const graph = model.graphSpans[node.graph]!;
  r.pos = graph.start + 1;
  r.uint32();
  const graphBody = [bytes.subarray(r.pos, node.span.start), Uint8Array.of((1 << 3) | LEN), varint(body.byteLength), body, bytes.subarray(node.span.end, graph.end)];
  const graphLength = graphBody.reduce((a, p) => a + p.byteLength, 0);
  return [bytes.subarray(0, graph.start), Uint8Array.of((7 << 3) | LEN), varint(graphLength), ...graphBody, bytes.subarray(graph.end)];
}
