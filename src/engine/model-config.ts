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
