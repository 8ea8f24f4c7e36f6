/**
 * Attention rows from GroupQueryAttention graphs: the kernel computes its softmax inside, but with the
 * attribute qk_output=2 it also returns it as its fourth output, output_qk [batch, heads, new tokens,
 * past + new] (onnxruntime's contrib op schema). onnxruntime's CPU kernel (onnxruntime-node, and
 * onnxruntime-web's wasm) fills it on a first pass and on a pass continuing from a past alike
 * (test/engine/fused-kernels.test.ts checks the rows against the standard export of the same weights).
 *
 * The model's bytes are not re-encoded: each GroupQueryAttention NodeProto gets bytes appended (an
 * output and an attribute; protobuf parsers append repeated fields in the order they meet them), and
 * the length prefixes of that node and of its graph are rewritten. Everything else is copied as is.
 */
import protobuf from 'protobufjs/minimal.js';
import { readNodeFields } from './graph-kind.js';
import { concat, WIRE } from './onnx-proto.js';

const { Reader, Writer } = protobuf;
const { LEN, VARINT } = WIRE;
/** ModelProto.graph, GraphProto.node, NodeProto.output and .attribute, AttributeProto fields. */
const FIELD = { graph: 7, node: 1, output: 2, attribute: 5, attrName: 1, attrInt: 3, attrType: 20 } as const;
/** AttributeProto.AttributeType INT. */
const ATTRIBUTE_INT = 2;
/** qk_output=2: the probabilities after softmax (1 would be the scores before it). */
const AFTER_SOFTMAX = 2;
/** output_qk is the op's fourth output (after output, present_key, present_value). */
const QK_OUTPUT_INDEX = 3;

/** The rewritten model and the probability tensor of each layer; or why there is none. */
export type GqaAttention = { ok: true; model: Uint8Array; probabilities: string[] } | { ok: false; reason: string };

const tag = (w: protobuf.Writer, field: number, wire: number) => w.uint32((field << 3) | wire);

/** The bytes appended to one GroupQueryAttention node: its output_qk (named `name`) and qk_output=2. */
function nodeExtension(outputs: number, name: string): Uint8Array {
  const w = Writer.create();
  // Absent optional outputs before output_qk are named '' (onnx's convention for a skipped output).
  for (let k = outputs; k < QK_OUTPUT_INDEX; k++) tag(w, FIELD.output, LEN).string('');
  tag(w, FIELD.output, LEN).string(name);
  tag(w, FIELD.attribute, LEN).fork();
  tag(w, FIELD.attrName, LEN).string('qk_output');
  tag(w, FIELD.attrInt, VARINT).int64(AFTER_SOFTMAX);
  tag(w, FIELD.attrType, VARINT).int32(ATTRIBUTE_INT);
  w.ldelim();
  return w.finish();
}

/**
 * Copies a message, replacing each length-delimited field `field` for which `edit` returns new bytes;
 * null when nothing was replaced.
 */
function replaceFields(bytes: Uint8Array, field: number, edit: (body: Uint8Array) => Uint8Array | null): Uint8Array | null {
  const r = Reader.create(bytes);
  const parts: Uint8Array[] = [];
  let copied = 0;
  while (r.pos < bytes.byteLength) {
    const start = r.pos;
    const t = r.uint32();
    if (t >>> 3 !== field || (t & 7) !== LEN) {
      r.skipType(t & 7);
      continue;
    }
    const length = r.uint32();
    const replaced = edit(bytes.subarray(r.pos, r.pos + length));
    r.skip(length);
    if (replaced === null) continue;
    const head = Writer.create();
    tag(head, field, LEN).uint32(replaced.byteLength);
    parts.push(bytes.subarray(copied, start), head.finish(), replaced);
    copied = r.pos;
  }
  return parts.length === 0 ? null : concat([...parts, bytes.subarray(copied)]);
}

/**
 * Sets qk_output=2 on every GroupQueryAttention node (in graph order, one per layer) and names its output_qk
 * `edgearmor/gqa/N/probabilities`, to be sliced into `attentions.N` by the attention adapter.
 */
export function exposeGroupQueryAttention(model: Uint8Array, numLayers: number): GqaAttention {
  const probabilities: string[] = [];
  let refusal: string | null = null;
  const rewritten = replaceFields(model, FIELD.graph, (graph) =>
    replaceFields(graph, FIELD.node, (node) => {
      const n = readNodeFields(Reader.create(node), node.byteLength);
      if (n.opType !== 'GroupQueryAttention' || n.domain !== 'com.microsoft') return null;
      if (n.attributes.has('qk_output') || n.output.length > QK_OUTPUT_INDEX) {
        refusal ??= 'a GroupQueryAttention node already sets qk_output or has an output_qk';
        return null;
      }
      const name = `edgearmor/gqa/${probabilities.length}/probabilities`;
      probabilities.push(name);
      return concat([node, nodeExtension(n.output.length, name)]);
    }),
  );
  if (refusal !== null) return { ok: false, reason: refusal };
  if (rewritten === null || probabilities.length !== numLayers) {
    return { ok: false, reason: `found ${probabilities.length} GroupQueryAttention nodes for ${numLayers} layers, so the attention of each layer cannot be told apart` };
  }
  return { ok: true, model: rewritten, probabilities };
}
