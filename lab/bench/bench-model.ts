/**
 * The benchmark's timing model, written from TypeScript so `npm run bench` needs only `npm ci`.
 *
 * onnx/model.onnx is the embedded model's own fp32 export (public/models/edgearmor-proxy, written by
 * model/export_onnx.py) with every weight replaced by seeded random values: the same graph, ops,
 * inputs, outputs and shapes by construction (hidden 256, 4 layers, 2 heads of 128, intermediate 704,
 * vocab 4096), weights N(0, 0.02) and RMSNorm weights 1, as the former Python script initialised them.
 * The weights are overwritten in place inside the protobuf bytes (a float tensor's raw_data keeps its
 * length), so nothing of the graph is re-encoded. config.json is the embedded model's with
 * max_position_embeddings 4608 so the 2k and 4k cases fit: RoPE is computed from position ids, there
 * is no position table, so the window is not part of the graph.
 *
 * onnx/matmul.onnx is one MatMul [m, 256] x [256, 704] (the MLP up-projection's shape), for the
 * same-run matmul peak, encoded here field by field (onnx.proto's field numbers).
 *
 * Usage: npx tsx lab/bench/bench-model.ts [.bench-model]
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs/minimal.js';

const { Reader, Writer } = protobuf;

/** The embedded model directory whose fp32 export gives the graph. */
export const SOURCE_MODEL_DIR = fileURLToPath(new URL('../../public/models/edgearmor-proxy/', import.meta.url));
/** Positions the benchmark's longest case needs (4k tokens plus the action). */
export const BENCH_MAX_POSITIONS = 4608;
const WEIGHT_STD = 0.02;
const SEED = 0x5eed;
const MATMUL_OPSET = 17;
/** onnx.proto: TensorProto.DataType FLOAT; wire types. */
const FLOAT = 1;
const VARINT = 0;
const LEN = 2;

/** A seeded N(0, std) source (mulberry32 + Box-Muller): the same weights on every machine. */
function gaussian(seed: number, std: number): () => number {
  let state = seed >>> 0;
  const uniform = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 1) / 4294967297;
  };
  return () => std * Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
}

/** One float initializer found in a ModelProto: its name, shape and where its raw_data bytes lie. */
export interface FloatInitializer {
  name: string;
  dims: number[];
  offset: number;
  byteLength: number;
}

/** Lists the graph's FLOAT initializers that store their values in raw_data (torch.onnx.export's layout). */
export function floatInitializers(model: Uint8Array): FloatInitializer[] {
  const found: FloatInitializer[] = [];
  const r = Reader.create(model);
  while (r.pos < model.byteLength) {
    const tag = r.uint32();
    if (tag >>> 3 !== 7 || (tag & 7) !== LEN) {
      r.skipType(tag & 7);
      continue;
    }
    const graphEnd = r.uint32() + r.pos;
    while (r.pos < graphEnd) {
      const gtag = r.uint32();
      if (gtag >>> 3 !== 5 || (gtag & 7) !== LEN) {
        r.skipType(gtag & 7);
        continue;
      }
      const end = r.uint32() + r.pos;
      let name = '';
      let dataType = 0;
      const dims: number[] = [];
      let raw: { offset: number; byteLength: number } | null = null;
      while (r.pos < end) {
        const t = r.uint32();
        const field = t >>> 3;
        if (field === 1 && (t & 7) === LEN) {
          const packedEnd = r.uint32() + r.pos;
          while (r.pos < packedEnd) dims.push(Number(r.int64()));
        } else if (field === 1 && (t & 7) === VARINT) dims.push(Number(r.int64()));
        else if (field === 2) dataType = r.int32();
        else if (field === 8) name = r.string();
        else if (field === 9) {
          const byteLength = r.uint32();
          raw = { offset: r.pos, byteLength };
          r.pos += byteLength;
        } else r.skipType(t & 7);
      }
      if (dataType !== FLOAT) continue;
      if (raw === null) throw new Error(`initializer ${name} keeps its floats outside raw_data; the bench model writer expects torch.onnx.export's layout`);
      found.push({ name, dims, ...raw });
    }
  }
  return found;
}

/** The source model with every float weight replaced: N(0, 0.02), RMSNorm weights 1. */
export function randomizeWeights(source: Uint8Array, seed = SEED): Uint8Array {
  const out = new Uint8Array(source);
  const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
  const next = gaussian(seed, WEIGHT_STD);
  for (const init of floatInitializers(out)) {
    const norm = init.name.endsWith('norm.weight');
    for (let i = 0; i < init.byteLength; i += 4) view.setFloat32(init.offset + i, norm ? 1 : next(), true);
  }
  return out;
}

function valueInfo(w: protobuf.Writer, field: number, name: string, dims: Array<number | string>): void {
  w.uint32((field << 3) | LEN).fork();
  w.uint32((1 << 3) | LEN).string(name);
  // ValueInfoProto.type -> TypeProto.tensor_type -> {elem_type, shape -> dim*}
  w.uint32((2 << 3) | LEN).fork();
  w.uint32((1 << 3) | LEN).fork();
  w.uint32((1 << 3) | VARINT).int32(FLOAT);
  w.uint32((2 << 3) | LEN).fork();
  for (const d of dims) {
    w.uint32((1 << 3) | LEN).fork();
    if (typeof d === 'number') w.uint32((1 << 3) | VARINT).int64(d);
    else w.uint32((2 << 3) | LEN).string(d);
    w.ldelim();
  }
  w.ldelim().ldelim().ldelim().ldelim();
}

/** An ONNX model of one MatMul: x [m, k] times a seeded random w [k, n] gives y [m, n]. */
export function matmulModel(k: number, n: number, seed = 1): Uint8Array {
  const weights = new Float32Array(k * n);
  const next = gaussian(seed, WEIGHT_STD);
  for (let i = 0; i < weights.length; i++) weights[i] = next();
  const w = Writer.create();
  w.uint32((1 << 3) | VARINT).int64(8); // ir_version 8 (onnx 1.10+), what opset 17 needs
  w.uint32((2 << 3) | LEN).string('edgearmor-bench');
  w.uint32((7 << 3) | LEN).fork();
  // node: MatMul(x, w) -> y
  w.uint32((1 << 3) | LEN).fork();
  w.uint32((1 << 3) | LEN).string('x');
  w.uint32((1 << 3) | LEN).string('w');
  w.uint32((2 << 3) | LEN).string('y');
  w.uint32((4 << 3) | LEN).string('MatMul');
  w.ldelim();
  w.uint32((2 << 3) | LEN).string('matmul');
  // initializer w: dims, data_type, name, raw_data (little-endian float32)
  w.uint32((5 << 3) | LEN).fork();
  w.uint32((1 << 3) | VARINT).int64(k);
  w.uint32((1 << 3) | VARINT).int64(n);
  w.uint32((2 << 3) | VARINT).int32(FLOAT);
  w.uint32((8 << 3) | LEN).string('w');
  w.uint32((9 << 3) | LEN).bytes(new Uint8Array(weights.buffer));
  w.ldelim();
  valueInfo(w, 11, 'x', ['m', k]);
  valueInfo(w, 12, 'y', ['m', n]);
  w.ldelim();
  w.uint32((8 << 3) | LEN).fork();
  w.uint32((1 << 3) | LEN).string('');
  w.uint32((2 << 3) | VARINT).int64(MATMUL_OPSET);
  w.ldelim();
  return w.finish();
}

/** Writes the timing model (config.json, onnx/model.onnx, onnx/matmul.onnx) into `outDir`; returns its config. */
export function writeBenchModel(outDir: string, sourceDir = SOURCE_MODEL_DIR): Record<string, unknown> {
  const source = JSON.parse(readFileSync(join(sourceDir, 'config.json'), 'utf8')) as Record<string, unknown>;
  const config: Record<string, unknown> = { ...source, max_position_embeddings: BENCH_MAX_POSITIONS };
  mkdirSync(join(outDir, 'onnx'), { recursive: true });
  writeFileSync(join(outDir, 'onnx', 'model.onnx'), randomizeWeights(readFileSync(join(sourceDir, 'onnx', 'model.onnx'))));
  writeFileSync(join(outDir, 'onnx', 'matmul.onnx'), matmulModel(config['hidden_size'] as number, config['intermediate_size'] as number));
  writeFileSync(join(outDir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  return config;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const out = process.argv[2] ?? '.bench-model';
  writeBenchModel(out);
  process.stdout.write(`wrote ${out}/config.json, ${out}/onnx/model.onnx, ${out}/onnx/matmul.onnx\n`);
}
