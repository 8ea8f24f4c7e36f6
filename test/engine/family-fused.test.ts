/**
 * A family decoder (Qwen3's vocabulary, real tokenizer and template) in onnxruntime-genai's fused layout
 * (RotaryEmbedding and GroupQueryAttention, SimplifiedLayerNormalization, MatMulNBits q4;
 * lab/model/make_family_fixture.py --layout gqa: its heads of 8 are below what the kernel's own rotary takes):
 * every MCP and travel check and the long (5k-token) one is a model verdict, and every variant's log-probs equal
 * those of the standard export of the same weights. The family fixtures share one graph whatever the vocabulary
 * (make_family_fixture.py), so one family covers the fused plan; family-render.test.ts checks every family's
 * rendering and verdicts in the standard layout.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { buildContext } from '../../src/core/context.js';
import { resolveOptions } from '../../src/core/options.js';
import { buildVariants } from '../../src/core/variants.js';
import { createEngine, type ProxyEngine, type ScoreRequest } from '../../src/engine/engine.js';
import { directoryReader } from '../../src/engine/files-node.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { createNodeGuard } from '../../src/node.js';
import { CASES, MODEL_CASES } from './family-cases.js';
import { CAN_BUILD_FAMILY_MODELS, familyModelDir, type Family, type FamilyLayout } from './family-models.js';

// Two fixture builds on first use, loading, three checks (one of about 5k tokens) and two scorings on two cores.
const MODEL_TIMEOUT_MS = 600_000;
// A check's own deadline: the long check scores a dozen 5k-token variants on a shared CPU.
const CHECK_TIMEOUT_MS = 300_000;
// Two layouts of the same q4 weights agree to this, relative to the log-prob (at least 1 in magnitude).
const SAME_WEIGHTS_REL_TOL = 1e-3;

const FAMILY: Family = 'qwen3';

describe.skipIf(!CAN_BUILD_FAMILY_MODELS)('family decoders in the fused GroupQueryAttention layout', () => {
  const engines: ProxyEngine[] = [];
  const guards: Array<{ dispose(): Promise<void> }> = [];
  afterAll(async () => {
    for (const e of engines) await e.dispose();
    for (const g of guards) await g.dispose();
  });

  async function engineOf(family: Family, layout: FamilyLayout): Promise<ProxyEngine> {
    const engine = await createEngine(await loadModelFiles(directoryReader(familyModelDir(family, layout)), 'q4'), { backend: 'node' });
    engines.push(engine);
    return engine;
  }

  it(
    `${FAMILY}: every MCP, travel and long check is a model verdict, and every travel variant equals the standard export's`,
    async () => {
      const family = FAMILY;
      const guard = createNodeGuard({ modelDir: familyModelDir(family, 'gqa'), modelVariant: 'q4', backends: ['node'], timeoutMs: CHECK_TIMEOUT_MS });
      guards.push(guard);
      await guard.ready;
      for (const [name, input] of Object.entries(MODEL_CASES)) {
        const v = await guard.check(input);
        expect(v, `${family} ${name}: ${v.error?.message ?? ''}`).toMatchObject({ reason: 'model' });
        expect(v.attribution!.variants.filter((x) => x.kind === 'no-tool')).toHaveLength(input.tools!.length);
      }
      const fused = await engineOf(family, 'gqa');
      const standard = await engineOf(family, 'standard');
      expect(fused.info).toMatchObject({ graph: 'gqa', rendering: standard.info.rendering, logitsSource: 'adapter' });
      const context = buildContext(CASES.travel, resolveOptions());
      const request: ScoreRequest = { context, variants: buildVariants(context, { toolLeaveOneOut: true }), actionText: 'template', withAttention: false };
      const [got, want] = [await fused.score(request), await standard.score(request)];
      for (const variant of request.variants) {
        const a = got.logProbs.get(variant.id)!;
        const b = want.logProbs.get(variant.id)!;
        const rel = Math.max(...Array.from(a, (x, j) => Math.abs(x - b[j]!) / Math.max(1, Math.abs(b[j]!))));
        expect(rel, `${family} ${variant.id}`).toBeLessThan(SAME_WEIGHTS_REL_TOL);
      }
    },
    MODEL_TIMEOUT_MS,
  );
});
