/**
 * The reference CausalArmor baseline on a real model: a second engine on the same model files,
 * scoring the reference's plain-text token sequences through the engine's batched scorer.
 */
import { isMainThread } from 'node:worker_threads';
import { planBackends } from '../core/backend-plan.js';
import { loadPlannedEngine } from '../engine/local-guard.js';
import { directoryReader } from '../engine/files-node.js';
import { loadModelFiles, type ModelVariant } from '../engine/model-files.js';
import type { EvalMethod } from './methods.js';
import { createReferenceCausalArmor } from './reference-causalarmor.js';

/** Loads the model in `modelDir` and returns the reference baseline over it. */
export async function createReferenceFromModel(modelDir: string, variant: ModelVariant, tau: number): Promise<{ method: EvalMethod; dispose: () => Promise<void> }> {
  const files = await loadModelFiles(directoryReader(modelDir), variant);
  const plan = await planBackends('auto', { isNode: true, isWorkerThread: !isMainThread, gpu: undefined });
  const { engine: e } = await loadPlannedEngine(files, plan.backends);
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
