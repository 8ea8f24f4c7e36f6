/**
 * The decoder layout of a model graph, read at load, and the scoring constraints it imposes.
 *
 * onnxruntime-genai's model builder (and the onnx-community builds made with it) lay decoders out with
 * onnxruntime's contrib ops. GroupQueryAttention takes `seqlens_k = sum(attention_mask) - 1` and
 * `total_sequence_length = attention_mask.shape[1]` instead of the mask itself: a row's real tokens must
 * be its first ones, so a batch can be right padded but never left padded, and no row can have a masked
 * gap; its rotary (inside the kernel with do_rotary=1) counts positions from the row's start. Its CPU kernel
 * also refuses a batch of more than one row that continues from a past. MultiHeadAttention in the builder's
 * layout adds a bias built from the whole 2D mask, so any mask is exact there, as in a standard export.
 *
 * What cannot be scored exactly is refused here with a ModelLoadError naming the op and the fix; nothing
 * is left to fail, or to score wrongly, at check time.
 */
import protobuf from 'protobufjs/minimal.js';
import { ModelLoadError } from '../core/errors.js';
import { readMessage, WIRE } from './onnx-proto.js';

const { Reader } = protobuf;
type ProtoReader = protobuf.Reader;

/**
 * A decoder graph's layout: `standard` (explicit attention, Optimum / onnx-community exports), `gqa`
 * (GroupQueryAttention after separate RotaryEmbedding ops), `gqa-rotary` (GroupQueryAttention with its
 * rotary inside, do_rotary=1), `mha` (MultiHeadAttention with an additive mask).
 */
export type GraphKind = 'standard' | 'gqa' | 'gqa-rotary' | 'mha';

/** What the scorers must respect on a graph kind. */
export interface GraphConstraints {
  /**
   * Every row's real tokens come first and are contiguous: batches are right padded and a pass that continues
   * from a past runs one row (GroupQueryAttention).
   */
  contiguousRows: boolean;
}

/** The kind of a graph and the fused ops it uses (for messages and docs). */
export interface GraphInspection {
  kind: GraphKind;
  /** com.microsoft (and SimplifiedLayerNormalization) ops found, sorted. */
  fusedOps: string[];
}

/** The scoring constraints of each graph kind. */
export function graphConstraints(kind: GraphKind): GraphConstraints {
  return { contiguousRows: kind === 'gqa' || kind === 'gqa-rotary' };
}

const { LEN, VARINT, FIXED32 } = WIRE;

/** The scalar fields of an AttributeProto. */
interface Attribute {
  i?: number;
  f?: number;
  s?: string;
}

/** The fields of a NodeProto the graph readers use. */
export interface NodeFields {
  opType: string;
  domain: string;
  input: string[];
  output: string[];
  attributes: Map<string, Attribute>;
}

function readAttribute(r: ProtoReader, length: number): [string, Attribute] {
  let name = '';
  const a: Attribute = {};
  readMessage(r, length, (f, w) => {
    if (f === 1 && w === LEN) name = r.string();
    else if (f === 2 && w === FIXED32) a.f = r.float();
    else if (f === 3 && w === VARINT) a.i = Number(r.int64());
    else if (f === 4 && w === LEN) a.s = new TextDecoder().decode(r.bytes());
    else return false;
    return true;
  });
  return [name, a];
}

/** A NodeProto's op, domain, inputs, outputs and scalar attributes. */
export function readNodeFields(r: ProtoReader, length: number): NodeFields {
  const n: NodeFields = { opType: '', domain: '', input: [], output: [], attributes: new Map() };
  readMessage(r, length, (f, w) => {
    if (w !== LEN) return false;
    if (f === 1) n.input.push(r.string());
    else if (f === 2) n.output.push(r.string());
    else if (f === 4) n.opType = r.string();
    else if (f === 7) n.domain = r.string();
    else if (f === 5) n.attributes.set(...readAttribute(r, r.uint32()));
    else return false;
    return true;
  });
  return n;
}

/** The top-level graph's nodes (subgraphs of If/Loop are not decoder layers). */
export function readGraphNodes(model: Uint8Array): NodeFields[] {
  const r = Reader.create(model);
  const nodes: NodeFields[] = [];
  readMessage(r, model.byteLength, (f, w) => {
    if (f !== 7 || w !== LEN) return false;
    readMessage(r, r.uint32(), (gf, gw) => {
      if (gf !== 1 || gw !== LEN) return false;
      nodes.push(readNodeFields(r, r.uint32()));
      return true;
    });
    return true;
  });
  return nodes;
}

/** Attention ops whose masking or cache layout the engine has no exact plan for, with what to use instead. */
const UNSUPPORTED_ATTENTION: Readonly<Record<string, string>> = {
  Attention: 'packed Attention takes a mask index whose padding layout the engine does not build',
  PackedAttention: 'packed (padding-free) batches are not built by the engine',
  PackedMultiHeadAttention: 'packed (padding-free) batches are not built by the engine',
  PagedAttention: 'paged KV caches (block tables) are not built by the engine',
  SparseAttention: 'block-sparse attention masks are not built by the engine',
  DecoderMaskedMultiHeadAttention: 'the kernel decodes one token at a time from a shared buffer',
  DecoderMaskedSelfAttention: 'the kernel decodes one token at a time from a shared buffer',
  DecoderAttention: 'the kernel is an encoder-decoder cross attention',
  LongformerAttention: 'the kernel is Longformer windowed attention',
  QAttention: 'the kernel takes quantized activations',
  QOrderedAttention: 'the kernel takes quantized activations',
  QOrderedLongformerAttention: 'the kernel takes quantized activations',
};

const FIX =
  'export the model in the standard layout (Optimum / onnx-community: explicit MatMul-Softmax attention), or with onnxruntime-genai\'s builder for the CPU execution provider (GroupQueryAttention, fp32 or int4)';

const attr = (n: NodeFields, name: string) => n.attributes.get(name);

function refuse(op: string, why: string, details: Record<string, string | number> = {}): never {
  throw new ModelLoadError(`the model's ${op} ${why}, which the engine cannot score exactly; ${FIX}`, { op, ...details });
}

/** The config dims the graph's attention must agree with. */
export interface AttentionDims {
  numHeads: number;
  numKeyValueHeads: number;
  headDim: number;
}

/** onnxruntime's GroupQueryAttention kernel rotates inside (do_rotary=1) only heads whose size is a multiple of this. */
const ROTARY_HEAD_MULTIPLE = 16;

function checkGroupQueryAttention(n: NodeFields, dims: AttentionDims): void {
  const int = (name: string, fallback: number) => attr(n, name)?.i ?? fallback;
  if (int('causal', 1) !== 1) refuse('GroupQueryAttention', 'is not causal (causal=0)', { attribute: 'causal' });
  if (int('sliding_window_cache', 0) !== 0) {
    refuse('GroupQueryAttention', 'keeps a window-sized KV cache (sliding_window_cache=1) that evicts positions, so a cached prefix cannot be reused or cut', { attribute: 'sliding_window_cache' });
  }
  for (const name of ['k_quant_type', 'v_quant_type']) {
    const s = attr(n, name)?.s;
    if (s !== undefined && s !== 'NONE') refuse('GroupQueryAttention', `quantizes its KV cache (${name}=${s})`, { attribute: name });
  }
  if (int('kv_cache_bit_width', 0) !== 0) refuse('GroupQueryAttention', `quantizes its KV cache (kv_cache_bit_width=${int('kv_cache_bit_width', 0)})`, { attribute: 'kv_cache_bit_width' });
  const heads = int('num_heads', 0);
  const kvHeads = int('kv_num_heads', 0);
  if (heads !== dims.numHeads || kvHeads !== dims.numKeyValueHeads) {
    throw new ModelLoadError(
      `the model's GroupQueryAttention has num_heads=${heads}, kv_num_heads=${kvHeads} but config.json says num_attention_heads=${dims.numHeads}, num_key_value_heads=${dims.numKeyValueHeads}; use the config.json the model was exported with`,
      { op: 'GroupQueryAttention', attribute: 'num_heads' },
    );
  }
  if (int('do_rotary', 0) === 1 && dims.headDim % ROTARY_HEAD_MULTIPLE !== 0) {
    // The kernel refuses it at every pass ("head_size shall be a multiple of 16"): every check would fail.
    throw new ModelLoadError(
      `the model's GroupQueryAttention rotates inside the kernel (do_rotary=1), which onnxruntime runs only for a head size that is a multiple of ${ROTARY_HEAD_MULTIPLE}, and config.json's head size is ${dims.headDim}; export it with separate RotaryEmbedding ops (do_rotary=0) or in the standard layout`,
      { op: 'GroupQueryAttention', attribute: 'do_rotary' },
    );
  }
}

function checkMultiHeadAttention(n: NodeFields): void {
  // Inputs: query, key, value, bias, key_padding_mask, attention_bias, past_key, past_value.
  const wired = (i: number) => (n.input[i] ?? '') !== '';
  if (!wired(4) && !wired(5)) {
    refuse('MultiHeadAttention', 'takes neither key_padding_mask nor attention_bias, so attention_mask (padding) never reaches it', { input: 'attention_bias' });
  }
  if (wired(6) || wired(7)) {
    // The builder concatenates the past outside the op (in the KV-head layout config.json gives); a cache kept
    // inside MultiHeadAttention has num_heads heads and its own causal offset, a layout no test covers.
    refuse('MultiHeadAttention', 'keeps its KV cache inside the op (past_key / past_value inputs)', { input: 'past_key' });
  }
  if (!wired(5) && (attr(n, 'unidirectional')?.i ?? 0) !== 1) {
    refuse('MultiHeadAttention', 'has no causal mask (unidirectional=0 and no attention_bias)', { attribute: 'unidirectional' });
  }
}

/**
 * The kind of a decoder graph; throws ModelLoadError for a fused layout the engine cannot score exactly
 * (an unsupported attention op or attribute), naming the op and the fix.
 */
export function inspectGraph(model: Uint8Array, dims: AttentionDims): GraphInspection {
  let nodes: NodeFields[];
  try {
    nodes = readGraphNodes(model);
  } catch (e) {
    throw new ModelLoadError(`the model is not a readable ONNX ModelProto (${(e as Error).message})`, {});
  }
  const fused = new Set<string>();
  let gqa = 0;
  let gqaRotary = 0;
  let mha = 0;
  for (const n of nodes) {
    if (n.domain === 'com.microsoft' || n.opType === 'SimplifiedLayerNormalization') fused.add(n.opType);
    if (n.domain !== 'com.microsoft') continue;
    const why = UNSUPPORTED_ATTENTION[n.opType];
    if (why !== undefined) refuse(n.opType, `is not supported: ${why}`);
    if (n.opType === 'GroupQueryAttention') {
      checkGroupQueryAttention(n, dims);
      gqa += 1;
      if ((attr(n, 'do_rotary')?.i ?? 0) === 1) gqaRotary += 1;
    } else if (n.opType === 'MultiHeadAttention') {
      checkMultiHeadAttention(n);
      mha += 1;
    }
  }
  const fusedOps = [...fused].sort();
  if (gqa > 0 && mha > 0) refuse('GroupQueryAttention', 'is mixed with MultiHeadAttention in one graph');
  if (gqa > 0) return { kind: gqaRotary > 0 ? 'gqa-rotary' : 'gqa', fusedOps };
  if (mha > 0) return { kind: 'mha', fusedOps };
  return { kind: 'standard', fusedOps };
}

const inspected = new Map<string, GraphInspection>();

/** {@link inspectGraph}, once per model file (by SHA-256) in this process; refusals are not kept. */
export function inspectGraphCached(model: Uint8Array, sha256: string, dims: AttentionDims): GraphInspection {
  if (sha256 === '') return inspectGraph(model, dims);
  const key = `${sha256}:${dims.numHeads}:${dims.numKeyValueHeads}:${dims.headDim}`;
  let result = inspected.get(key);
  if (!result) inspected.set(key, (result = inspectGraph(model, dims)));
  return result;
}
