/**
 * The reference CausalArmor baseline on a real model: a second engine on the same model files,
 * scoring the reference's plain-text token sequences through the engine's batched scorer.
 */
import { directoryReader } from '../engine/files-node.js';
import { loadModelFiles, type ModelVariant } from '../engine/model-files.js';
import { loadNodeEngine } from '../node/backends.js';
import type { EvalMethod } from './methods.js';
import { createReferenceCausalArmor } from './reference-causalarmor.js';

/** Loads the model in `modelDir` and returns the reference baseline over it. */
export async function createReferenceFromModel(modelDir: string, variant: ModelVariant, tau: number): Promise<{ method: EvalMethod; dispose: () => Promise<void> }> {
  const files = await loadModelFiles(directoryReader(modelDir), variant);
  const { engine: e } = await loadNodeEngine(files);
  const method = createReferenceCausalArmor(
    {
      encode: (text) => e.tokenizer.encodeText(text),
      score: async (sequences) => (await e.scoreTokens(sequences)).map((r) => r.tokenLogProbs),
      maxTokens: e.info.maxContextTokens,
    },
    tau,
  );
  return { method, dispose: () => e.dispose() };
}
