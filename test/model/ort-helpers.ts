/**
 * Raw onnxruntime helpers for the model parity tests (no engine code yet): load a model on
 * onnxruntime-node or onnxruntime-web (wasm, in Node), build transformers.js-layout feeds
 * (left-padded batches, empty or carried-over KV cache, int64 scalars) and read outputs back.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as ortNode from 'onnxruntime-node';
import * as ortWeb from 'onnxruntime-web';

export interface ModelConfig {
  vocab_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  head_dim: number;
  pad_token_id: number;
}

/** A backend-neutral tensor: what we feed in and what we read back. */
export interface HostTensor {
  type: 'int64' | 'float32';
  data: BigInt64Array | Float32Array;
  dims: number[];
}
export type Feeds = Record<string, HostTensor>;
export type Outputs = Record<string, { data: Float32Array; dims: number[] }>;

export interface Session {
  run(feeds: Feeds): Promise<Outputs>;
  release(): Promise<void>;
}
export interface Backend {
  name: string;
  load(bytes: Uint8Array): Promise<Session>;
}

function readOutputs(out: Record<string, { data: unknown; dims: readonly number[]; type: string }>): Outputs {
  const res: Outputs = {};
  for (const [name, t] of Object.entries(out)) {
    if (t.type !== 'float32') throw new Error(`output ${name} has type ${t.type}, expected float32`);
    res[name] = { data: t.data as Float32Array, dims: [...t.dims] };
  }
  return res;
}

export const nodeBackend: Backend = {
  name: 'onnxruntime-node',
  async load(bytes) {
    const s = await ortNode.InferenceSession.create(bytes, { executionProviders: ['cpu'] });
    return {
      async run(feeds) {
        const f: Record<string, ortNode.Tensor> = {};
        for (const [k, v] of Object.entries(feeds)) f[k] = new ortNode.Tensor(v.type, v.data, v.dims);
        return readOutputs(await s.run(f));
      },
      release: () => s.release(),
    };
  },
};

export const webBackend: Backend = {
  name: 'onnxruntime-web (wasm)',
  async load(bytes) {
    ortWeb.env.wasm.numThreads = 1;
    const s = await ortWeb.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
    return {
      async run(feeds) {
        const f: Record<string, ortWeb.Tensor> = {};
        for (const [k, v] of Object.entries(feeds)) f[k] = new ortWeb.Tensor(v.type, v.data, v.dims);
        return readOutputs(await s.run(f));
      },
      release: () => s.release(),
    };
  },
};

export const int64Scalar = (v: number): HostTensor => ({ type: 'int64', data: BigInt64Array.of(BigInt(v)), dims: [] });

/**
 * One left-padded batch in the full-sequence view: ids, attention mask (0 on padding) and position ids
 * counting from each row's first real token (padded positions get `padPosition`, 1 as transformers.js does).
 */
export interface PaddedBatch {
  batch: number;
  seqLen: number;
  ids: number[][];
  mask: number[][];
  positions: number[][];
  /** Left offset of each row's first real token. */
  offsets: number[];
}

export function leftPad(seqs: number[][], padId: number, padPosition = 1): PaddedBatch {
  const seqLen = Math.max(...seqs.map((s) => s.length));
  const ids: number[][] = [];
  const mask: number[][] = [];
  const positions: number[][] = [];
  const offsets: number[] = [];
  for (const s of seqs) {
    const off = seqLen - s.length;
    offsets.push(off);
    ids.push([...new Array<number>(off).fill(padId), ...s]);
    mask.push([...new Array<number>(off).fill(0), ...new Array<number>(s.length).fill(1)]);
    positions.push([...new Array<number>(off).fill(padPosition), ...s.map((_, i) => i)]);
  }
  return { batch: seqs.length, seqLen, ids, mask, positions, offsets };
}

const int64Matrix = (rows: number[][]): HostTensor => ({
  type: 'int64',
  data: BigInt64Array.from(rows.flat().map((x) => BigInt(x))),
  dims: [rows.length, rows[0]?.length ?? 0],
});

export interface StepOptions {
  /** num_logits_to_keep: logits for the last K positions, 0 = all. */
  keep?: number;
  /** num_attention_rows: attention rows of the last R queries, 0 = none. */
  rows?: number;
  /** Presents of the previous step (present.N.key|value); empty past when absent. */
  past?: Outputs;
}

/**
 * Feeds for columns [from, to) of a padded batch: input_ids/position_ids for those columns,
 * attention_mask over [0, to) (past + new), and past_key_values from `past` (must hold `from` positions)
 * or empty [b, kv_heads, 0, head_dim] tensors when from = 0.
 */
export function stepFeeds(cfg: ModelConfig, pb: PaddedBatch, from: number, to: number, opt: StepOptions = {}): Feeds {
  const feeds: Feeds = {
    input_ids: int64Matrix(pb.ids.map((r) => r.slice(from, to))),
    attention_mask: int64Matrix(pb.mask.map((r) => r.slice(0, to))),
    position_ids: int64Matrix(pb.positions.map((r) => r.slice(from, to))),
    num_logits_to_keep: int64Scalar(opt.keep ?? 0),
    num_attention_rows: int64Scalar(opt.rows ?? 0),
  };
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    for (const kv of ['key', 'value'] as const) {
      const name = `past_key_values.${l}.${kv}`;
      if (from === 0) {
        feeds[name] = { type: 'float32', data: new Float32Array(0), dims: [pb.batch, cfg.num_key_value_heads, 0, cfg.head_dim] };
      } else {
        const p = opt.past?.[`present.${l}.${kv}`];
        if (!p) throw new Error(`missing present.${l}.${kv} for a continuation step`);
        if (p.dims[2] !== from) throw new Error(`present.${l}.${kv} holds ${p.dims[2]} positions, expected ${from}`);
        feeds[name] = { type: 'float32', data: p.data, dims: p.dims };
      }
    }
  }
  return feeds;
}

/** Row `row` of a [b, n, V] logits tensor for batch item `b`. */
export function logitsRow(t: { data: Float32Array; dims: number[] }, b: number, row: number): Float32Array {
  const [, n = 0, v = 0] = t.dims;
  const start = (b * n + row) * v;
  return t.data.subarray(start, start + v);
}

export function logSoftmaxAt(row: Float32Array, target: number): number {
  let max = -Infinity;
  for (const x of row) if (x > max) max = x;
  let sum = 0;
  for (const x of row) sum += Math.exp(x - max);
  return (row[target] ?? NaN) - max - Math.log(sum);
}

/** attentions.N [b, H, R, T] -> the row r of head h for batch item b, keys [k0, T). */
export function attentionRow(t: { data: Float32Array; dims: number[] }, b: number, h: number, r: number, k0 = 0): Float32Array {
  const [, H = 0, R = 0, T = 0] = t.dims;
  const start = ((b * H + h) * R + r) * T;
  return t.data.subarray(start + k0, start + T);
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length mismatch ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs((a[i] ?? NaN) - (b[i] ?? NaN)));
  return Number.isNaN(m) ? Infinity : m;
}

export const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');
