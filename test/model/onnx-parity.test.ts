/**
 * ONNX parity of exported proxy models against PyTorch golden values (lab/model/golden.py), on
 * onnxruntime-node and onnxruntime-web (wasm), fp32 and 4-bit (MatMulNBits) variants, plus the
 * structural guarantees the engine relies on: left-padded batches, KV-cache continuation,
 * num_logits_to_keep / num_attention_rows, and the manifest's hashes.
 *
 * Add the real model by appending its entry to MODELS (after exporting it and running lab/model/golden.py).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  attentionRow,
  type Backend,
  leftPad,
  logitsRow,
  logSoftmaxAt,
  maxAbsDiff,
  type ModelConfig,
  nodeBackend,
  type Session,
  sha256File,
  stepFeeds,
  webBackend,
} from './ort-helpers';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** fp32 ONNX vs PyTorch, and every structural equality (batching, KV cache), on every backend. */
const FP32_TOL = 1e-4;

interface ModelEntry {
  name: string;
  /** Model dir relative to the repo root (config.json, onnx/model.onnx, onnx/model_q4.onnx, manifest.json). */
  dir: string;
  /** Golden JSON written by lab/model/golden.py. */
  golden: string;
  /** Max |log p(next token)| difference allowed for model_q4.onnx vs the fp32 PyTorch golden. */
  q4LogprobBound: number;
  /** Max attention-probability difference allowed for model_q4.onnx vs the fp32 PyTorch golden. */
  q4AttentionBound: number;
  /** Max |log-prob diff| of model_q4.onnx vs PyTorch with q4-roundtripped weights (golden q4_reference). */
  q4ReferenceTol: number;
}

/**
 * tiny-proxy: random weights drawn wide on purpose (peaked logits/attention), so 4-bit rounding moves its
 * log-probs a lot more than it would a trained model's. Measured (model_q4.onnx, accuracy_level 0) vs the
 * fp32 PyTorch golden: max |log-prob diff| 2.167 and max |attention diff| 0.220 on both backends.
 * Bounds below keep ~40% headroom. The tight check is Q4_REFERENCE_TOL: vs PyTorch run with
 * dequant(quantize(W)) the same model measured 4.6e-6 (node) and 6.5e-6 (wasm).
 */
const Q4_LOGPROB_BOUND_TINY = 3.0;
const Q4_ATTENTION_BOUND_TINY = 0.35;
/**
 * The trained embedded proxy, measured (model_q4.onnx vs fp32 PyTorch, both backends, the shipped sv7ns-s7
 * weights): max |log-prob diff| 1.62 over every next-token log-prob of the golden sequences (all 4,096
 * vocabulary entries, so mostly the unlikely tail), max |attention diff| 0.136; earlier weights measured
 * 1.28 / 0.156 and 1.79 / 0.187, and the bounds (kept for all) leave 25-80% headroom. What the guard reads is checked in
 * test/engine/embedded-model.test.ts (per action token) and measured by the evaluation (model card, Parity).
 */
const Q4_LOGPROB_BOUND_EMBEDDED = 2.3;
const Q4_ATTENTION_BOUND_EMBEDDED = 0.24;
/** model_q4.onnx vs PyTorch with the same q4-roundtripped weights: only fp32 rounding may differ. */
const Q4_REFERENCE_TOL = 1e-4;

const MODELS: ModelEntry[] = [
  {
    name: 'tiny-proxy',
    dir: 'test/fixtures/tiny-proxy',
    golden: 'test/fixtures/golden-tiny-proxy.json',
    q4LogprobBound: Q4_LOGPROB_BOUND_TINY,
    q4AttentionBound: Q4_ATTENTION_BOUND_TINY,
    q4ReferenceTol: Q4_REFERENCE_TOL,
  },
  {
    name: 'edgearmor-proxy',
    dir: 'public/models/edgearmor-proxy',
    golden: 'test/fixtures/golden-edgearmor-proxy.json',
    q4LogprobBound: Q4_LOGPROB_BOUND_EMBEDDED,
    q4AttentionBound: Q4_ATTENTION_BOUND_EMBEDDED,
    q4ReferenceTol: Q4_REFERENCE_TOL,
  },
];

interface Golden {
  format: string;
  model: string;
  config: ModelConfig;
  sequences: number[][];
  padded_batch: number[];
  position_ids_padding: number;
  next_token: { positions: number[]; targets: number[]; logprobs: number[] }[];
  logits: { sequence: number; positions: number[]; vocab_start: number; values: number[][] };
  attentions: { rows: number; per_sequence: { key_start: number; values: number[][][][] }[] };
  q4_reference: { quantizer: string; next_token_logprobs: number[][] };
}

const BACKENDS: Backend[] = [nodeBackend, webBackend];
const VARIANTS = ['fp32', 'q4'] as const;
type Variant = (typeof VARIANTS)[number];
const FILES: Record<Variant, string> = { fp32: 'onnx/model.onnx', q4: 'onnx/model_q4.onnx' };

function listFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir)) {
    const p = join(dir, e);
    if (statSync(p).isDirectory()) out.push(...listFiles(p));
    else out.push(p);
  }
  return out;
}

for (const entry of MODELS) {
  const dir = join(ROOT, entry.dir);
  const golden = JSON.parse(readFileSync(join(ROOT, entry.golden), 'utf8')) as Golden;
  const cfg = golden.config;

  describe(`model ${entry.name} (${entry.dir})`, () => {
    it('golden file and config agree', () => {
      expect(golden.format).toBe('edgearmor-golden/1');
      const conf = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as ModelConfig;
      for (const k of ['vocab_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim'] as const) {
        expect(conf[k], k).toBe(cfg[k]);
      }
      for (const s of golden.sequences) expect(Math.max(...s)).toBeLessThan(cfg.vocab_size);
    });

    it('manifest.json lists every file with matching sha256 and size', () => {
      const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as {
        files: Record<string, { sha256: string; size: number }>;
        model: string;
        created_by: string;
      };
      expect(manifest.created_by).toBe('model/manifest.py');
      const onDisk = listFiles(dir)
        .map((p) => relative(dir, p).split('\\').join('/'))
        .filter((p) => p !== 'manifest.json')
        .sort();
      expect(Object.keys(manifest.files).sort()).toEqual(onDisk);
      for (const [rel, info] of Object.entries(manifest.files)) {
        expect(sha256File(join(dir, rel)), rel).toBe(info.sha256);
        expect(statSync(join(dir, rel)).size, rel).toBe(info.size);
      }
    });

    for (const backend of BACKENDS) {
      for (const variant of VARIANTS) {
        describe(`${backend.name} ${variant}`, () => {
          let session: Session;
          const lpTol = variant === 'fp32' ? FP32_TOL : entry.q4LogprobBound;
          const attTol = variant === 'fp32' ? FP32_TOL : entry.q4AttentionBound;

          beforeAll(async () => {
            session = await backend.load(readFileSync(join(dir, FILES[variant])));
          });
          afterAll(async () => {
            await session?.release();
          });

          it('matches the PyTorch golden log-probs, logits and attention rows (unbatched)', async () => {
            let worstLp = 0;
            let worstAtt = 0;
            let worstLogit = 0;
            let worstQ4Ref = 0;
            for (const [si, seq] of golden.sequences.entries()) {
              const pb = leftPad([seq], cfg.pad_token_id, golden.position_ids_padding);
              const out = await session.run(stepFeeds(cfg, pb, 0, pb.seqLen, { rows: golden.attentions.rows }));
              const logits = out.logits!;
              expect(logits.dims).toEqual([1, seq.length, cfg.vocab_size]);
              const nt = golden.next_token[si]!;
              const got = nt.positions.map((p, i) => logSoftmaxAt(logitsRow(logits, 0, p), nt.targets[i]!));
              worstLp = Math.max(worstLp, maxAbsDiff(got, nt.logprobs));
              worstQ4Ref = Math.max(worstQ4Ref, maxAbsDiff(got, golden.q4_reference.next_token_logprobs[si]!));
              const ga = golden.attentions.per_sequence[si]!;
              for (let l = 0; l < cfg.num_hidden_layers; l++) {
                const a = out[`attentions.${l}`]!;
                expect(a.dims).toEqual([1, cfg.num_attention_heads, golden.attentions.rows, seq.length]);
                for (let h = 0; h < cfg.num_attention_heads; h++) {
                  for (let r = 0; r < golden.attentions.rows; r++) {
                    worstAtt = Math.max(worstAtt, maxAbsDiff(attentionRow(a, 0, h, r, ga.key_start), ga.values[l]![h]![r]!));
                  }
                }
              }
              if (si === golden.logits.sequence) {
                const gl = golden.logits;
                for (const [i, p] of gl.positions.entries()) {
                  const row = logitsRow(logits, 0, p).subarray(gl.vocab_start, gl.vocab_start + gl.values[i]!.length);
                  worstLogit = Math.max(worstLogit, maxAbsDiff(row, gl.values[i]!));
                }
              }
            }
            console.log(
              `[${entry.name} ${backend.name} ${variant}] vs PyTorch: max |dlogprob| ${worstLp.toExponential(3)}, ` +
                `max |dattn| ${worstAtt.toExponential(3)}, max |dlogit| ${worstLogit.toExponential(3)}; ` +
                `vs PyTorch with q4-roundtripped weights: max |dlogprob| ${worstQ4Ref.toExponential(3)}`,
            );
            // The packing check: model_q4.onnx must compute what PyTorch computes with dequant(quantize(W)).
            if (variant === 'q4') expect(worstQ4Ref).toBeLessThanOrEqual(entry.q4ReferenceTol);
            expect(worstLp).toBeLessThanOrEqual(lpTol);
            expect(worstAtt).toBeLessThanOrEqual(attTol);
            // Raw logits are only held to 1e-4 for fp32; q4 is judged on log-probs (its logits shift).
            if (variant === 'fp32') expect(worstLogit).toBeLessThanOrEqual(FP32_TOL);
          });

          it('a left-padded batch equals the unbatched runs', async () => {
            const seqs = golden.padded_batch.map((i) => golden.sequences[i]!);
            const rows = golden.attentions.rows;
            const pb = leftPad(seqs, cfg.pad_token_id, golden.position_ids_padding);
            expect(new Set(seqs.map((s) => s.length)).size).toBeGreaterThan(1);
            const batched = await session.run(stepFeeds(cfg, pb, 0, pb.seqLen, { rows }));
            let worst = 0;
            for (const [b, seq] of seqs.entries()) {
              const one = leftPad([seq], cfg.pad_token_id, golden.position_ids_padding);
              const single = await session.run(stepFeeds(cfg, one, 0, one.seqLen, { rows }));
              const off = pb.offsets[b]!;
              for (let p = 0; p < seq.length; p++) {
                worst = Math.max(worst, maxAbsDiff(logitsRow(batched.logits!, b, off + p), logitsRow(single.logits!, 0, p)));
              }
              for (let l = 0; l < cfg.num_hidden_layers; l++) {
                for (let h = 0; h < cfg.num_attention_heads; h++) {
                  for (let r = 0; r < rows; r++) {
                    const ba = attentionRow(batched[`attentions.${l}`]!, b, h, r);
                    // Padding keys must get (numerically) zero weight; the real keys must match.
                    expect(Math.max(...ba.subarray(0, off))).toBeLessThanOrEqual(1e-6 + (off === 0 ? Infinity : 0));
                    worst = Math.max(worst, maxAbsDiff(ba.subarray(off), attentionRow(single[`attentions.${l}`]!, 0, h, r)));
                  }
                }
              }
            }
            expect(worst).toBeLessThanOrEqual(FP32_TOL);
          });

          it('KV-cache continuation equals a full forward (single sequence and left-padded batch)', async () => {
            const rows = golden.attentions.rows;
            const cases = [
              [golden.sequences[0]!],
              golden.padded_batch.map((i) => golden.sequences[i]!),
            ];
            for (const seqs of cases) {
              const pb = leftPad(seqs, cfg.pad_token_id, golden.position_ids_padding);
              const minLen = Math.min(...seqs.map((s) => s.length));
              const split = pb.seqLen - Math.min(7, minLen - 1); // every row keeps real tokens in the prefix
              const full = await session.run(stepFeeds(cfg, pb, 0, pb.seqLen, { rows }));
              const first = await session.run(stepFeeds(cfg, pb, 0, split));
              const rest = await session.run(stepFeeds(cfg, pb, split, pb.seqLen, { rows, past: first }));
              expect(rest.logits!.dims).toEqual([pb.batch, pb.seqLen - split, cfg.vocab_size]);
              let worst = 0;
              for (let b = 0; b < pb.batch; b++) {
                for (let p = split; p < pb.seqLen; p++) {
                  worst = Math.max(worst, maxAbsDiff(logitsRow(rest.logits!, b, p - split), logitsRow(full.logits!, b, p)));
                }
                for (let l = 0; l < cfg.num_hidden_layers; l++) {
                  expect(rest[`attentions.${l}`]!.dims).toEqual([pb.batch, cfg.num_attention_heads, rows, pb.seqLen]);
                  for (let h = 0; h < cfg.num_attention_heads; h++) {
                    for (let r = 0; r < rows; r++) {
                      worst = Math.max(worst, maxAbsDiff(attentionRow(rest[`attentions.${l}`]!, b, h, r), attentionRow(full[`attentions.${l}`]!, b, h, r)));
                    }
                  }
                }
                // Presents at real positions must match. Padded positions are excluded: a fully masked
                // query row softmaxes uniformly over every key of its call, so from layer 1 on the
                // padding's own keys/values depend on the call's length (harmless: they stay masked).
                for (let l = 0; l < cfg.num_hidden_layers; l++) {
                  for (const kv of ['key', 'value'] as const) {
                    const pr = rest[`present.${l}.${kv}`]!;
                    const fu = full[`present.${l}.${kv}`]!;
                    expect(pr.dims).toEqual([pb.batch, cfg.num_key_value_heads, pb.seqLen, cfg.head_dim]);
                    const hd = cfg.head_dim;
                    for (let h = 0; h < cfg.num_key_value_heads; h++) {
                      const base = ((b * cfg.num_key_value_heads + h) * pb.seqLen) * hd;
                      const from = base + pb.offsets[b]! * hd;
                      const to = base + pb.seqLen * hd;
                      worst = Math.max(worst, maxAbsDiff(pr.data.subarray(from, to), fu.data.subarray(from, to)));
                    }
                  }
                }
              }
              expect(worst).toBeLessThanOrEqual(FP32_TOL);
            }
          });

          it('num_logits_to_keep = K returns the last K logit rows; num_attention_rows = R the last R rows', async () => {
            const seq = golden.sequences[1]!;
            const pb = leftPad([seq], cfg.pad_token_id, golden.position_ids_padding);
            const n = pb.seqLen;
            const full = await session.run(stepFeeds(cfg, pb, 0, n, { keep: 0, rows: n }));
            expect(full.logits!.dims).toEqual([1, n, cfg.vocab_size]);
            for (const K of [1, 5, n]) {
              const R = Math.min(K + 1, n);
              const out = await session.run(stepFeeds(cfg, pb, 0, n, { keep: K, rows: R }));
              expect(out.logits!.dims).toEqual([1, K, cfg.vocab_size]);
              let worst = 0;
              for (let i = 0; i < K; i++) {
                worst = Math.max(worst, maxAbsDiff(logitsRow(out.logits!, 0, i), logitsRow(full.logits!, 0, n - K + i)));
              }
              for (let l = 0; l < cfg.num_hidden_layers; l++) {
                const a = out[`attentions.${l}`]!;
                expect(a.dims).toEqual([1, cfg.num_attention_heads, R, n]);
                for (let h = 0; h < cfg.num_attention_heads; h++) {
                  for (let r = 0; r < R; r++) {
                    worst = Math.max(worst, maxAbsDiff(attentionRow(a, 0, h, r), attentionRow(full[`attentions.${l}`]!, 0, h, n - R + r)));
                  }
                }
              }
              expect(worst, `K=${K} R=${R}`).toBeLessThanOrEqual(1e-5);
            }
            const none = await session.run(stepFeeds(cfg, pb, 0, n, { keep: 0, rows: 0 }));
            expect(none.logits!.dims).toEqual([1, n, cfg.vocab_size]);
            expect(none['attentions.0']!.dims).toEqual([1, cfg.num_attention_heads, 0, n]);
          });
        });
      }
    }
  });
}

it('the model list is not empty and every listed dir exists', () => {
  expect(MODELS.length).toBeGreaterThan(0);
  for (const m of MODELS) expect(existsSync(join(ROOT, m.dir, FILES.fp32)), m.dir).toBe(true);
});
