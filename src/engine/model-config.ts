/** The model dimensions the engine and the scorers read from a model's config.json. */
import { ModelLoadError } from '../core/errors.js';
import type { ModelDims } from './scorer.js';
import type { ProxyTokenizer } from './tokenizer.js';

/** The model's longest sequence, from config.json. */
export function maxPositionsFromConfig(config: Record<string, unknown>): number {
  const v = config['max_position_embeddings'];
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
    throw new ModelLoadError(`config.json: "max_position_embeddings" must be a positive integer, received ${JSON.stringify(v)}`, { key: 'max_position_embeddings' });
  }
  return v;
}

/** The id left padding uses (always masked, so any real token works): the model's pad token when it has one. */
export function padTokenIdOf(config: Record<string, unknown>, tokenizer: ProxyTokenizer): number {
  const fromConfig = config['pad_token_id'];
  if (typeof fromConfig === 'number' && Number.isInteger(fromConfig) && fromConfig >= 0) return fromConfig;
  if (tokenizer.controlTokens.includes('<|pad|>')) return tokenizer.controlId('<|pad|>');
  const eos = config['eos_token_id'];
  return typeof eos === 'number' && Number.isInteger(eos) && eos >= 0 ? eos : 0;
}

/** The model dimensions the scorers need, from config.json; throws ModelLoadError naming a bad field. */
export function dimsFromConfig(config: Record<string, unknown>, padTokenId: number): ModelDims & { maxPositions: number } {
  const num = (key: string, fallback?: number): number => {
    const v = config[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      throw new ModelLoadError(`config.json: "${key}" must be a positive integer, received ${JSON.stringify(v)}`, { key });
    }
    return v;
  };
  const hidden = num('hidden_size');
  const heads = num('num_attention_heads');
  return {
    numLayers: num('num_hidden_layers'),
    numHeads: heads,
    numKeyValueHeads: num('num_key_value_heads', heads),
    headDim: num('head_dim', hidden / heads),
    vocabSize: num('vocab_size'),
    padTokenId,
    maxPositions: maxPositionsFromConfig(config),
    hiddenSize: hidden,
    intermediateSize: num('intermediate_size', 4 * hidden),
  };
}

/**
 * config.json's fields, from an onnxruntime-genai genai_config.json (its model builder writes no config.json):
 * model.context_length, model.vocab_size, the token ids, and model.decoder's head counts, head_size and
 * hidden_size. Throws ModelLoadError naming the first field that is missing or not a positive integer.
 */
export function configFromGenai(genai: Record<string, unknown>): Record<string, unknown> {
  const model = (genai['model'] ?? {}) as Record<string, unknown>;
  const decoder = (model['decoder'] ?? {}) as Record<string, unknown>;
  const num = (from: Record<string, unknown>, key: string, where: string): number => {
    const v = from[key];
    if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0) {
      throw new ModelLoadError(`genai_config.json: "${where}${key}" must be a positive integer, received ${JSON.stringify(v)}`, { file: 'genai_config.json', key: `${where}${key}` });
    }
    return v;
  };
  const heads = num(decoder, 'num_attention_heads', 'model.decoder.');
  const config: Record<string, unknown> = {
    model_type: model['type'],
    num_hidden_layers: num(decoder, 'num_hidden_layers', 'model.decoder.'),
    num_attention_heads: heads,
    num_key_value_heads: decoder['num_key_value_heads'] === undefined ? heads : num(decoder, 'num_key_value_heads', 'model.decoder.'),
    head_dim: num(decoder, 'head_size', 'model.decoder.'),
    hidden_size: num(decoder, 'hidden_size', 'model.decoder.'),
    vocab_size: num(model, 'vocab_size', 'model.'),
    max_position_embeddings: num(model, 'context_length', 'model.'),
  };
  // Token ids as the builder writes them: eos may be a list; pad is absent on some builds.
  for (const key of ['bos_token_id', 'eos_token_id', 'pad_token_id']) if (model[key] !== undefined && model[key] !== null) config[key] = model[key];
  return config;
}
