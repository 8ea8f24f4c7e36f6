/**
 * onnxruntime-genai's model directory: genai_config.json names the graph (model.decoder.filename, model.onnx by
 * default) beside it, and one build's variant is read from that graph rather than chosen.
 */
import { ModelLoadError } from '../core/errors.js';
import type { ModelVariant } from '../core/runtime-options.js';
import { readModel } from './onnx-proto.js';

/** The graph file onnxruntime-genai's builder writes when not told another name (genai_config.json's model.decoder.filename). */
export const GENAI_DEFAULT_ONNX = 'model.onnx';

/** The graph file genai_config.json names (model.decoder.filename), checked to be a file name beside it. */
export function genaiOnnxFile(genai: Record<string, unknown>): string {
  const decoder = (genai['model'] as { decoder?: { filename?: unknown } } | undefined)?.decoder;
  const name = decoder?.filename ?? GENAI_DEFAULT_ONNX;
  if (typeof name !== 'string' || !/^[\w.-]+\.onnx$/.test(name) || name.startsWith('.')) {
    throw new ModelLoadError(`genai_config.json: "model.decoder.filename" must name an .onnx file beside it, received ${JSON.stringify(name)}`, { file: 'genai_config.json', key: 'model.decoder.filename' });
  }
  return name;
}

/** ONNX TensorProto element type float16. */
const FLOAT16 = 10;

/**
 * The variant an onnxruntime-genai build is, from its graph: float16 activations (the KV cache inputs'
 * type) and MatMulNBits (4-bit weights). A genai directory holds one build, so it is read, not chosen.
 */
export function graphVariant(onnx: Uint8Array): ModelVariant {
  const model = readModel(onnx);
  const graph = model.graph;
  const typed = graph?.input.find((i) => i.name.startsWith('past_key_values.')) ?? graph?.output.find((o) => o.name === 'logits');
  const half = typed?.elemType === FLOAT16;
  const nbits = graph?.node.some((n) => n.op_type === 'MatMulNBits') ?? false;
  return nbits ? (half ? 'q4f16' : 'q4') : half ? 'fp16' : 'fp32';
}

