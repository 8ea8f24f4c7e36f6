/**
 * KV caches of the prefix scorer: a row's cache (kept as onnxruntime's present tensors while it is one
 * pass's presents, so on WebGPU the next chunk reads it without a round trip through the CPU; host
 * arrays once a later pass copies a prefix of it), and the reusable buffers passes copy pasts into.
 */
import type { Tensor } from 'onnxruntime-web';
import { float16Bits } from './float16.js';
import type { OrtSession } from './ort-session.js';
import { tensorData, type ModelDims } from './scorer.js';

/** KV elements: float32 values, or float16 bit patterns for fp16 models (copied, never converted). */
export type KvArray = Float32Array | Uint16Array;

export type KvLayers = Array<{ key: KvArray; value: KvArray }>;

/** A KV tensor of the stored element type. */
export const kvTensor = (session: OrtSession, data: KvArray, shape: readonly number[]): Tensor =>
  data instanceof Uint16Array ? session.makeFloat16(data, shape) : session.makeFloat32(data, shape);

/** The past input one layer's key or value cache feeds. */
export const pastName = (layer: number, kv: 'key' | 'value') => `past_key_values.${layer}.${kv}`;

/**
 * A KV cache of one row: per layer, key and value [kvHeads, length, headDim]. A cache that is exactly one
 * pass's present tensors keeps them as onnxruntime returned them (on WebGPU GPU buffers, downloaded only
 * if a later pass must copy a prefix of them); a cache cut out of a batched pass holds host arrays.
 */
export class KvCache {
  private host: KvLayers | undefined;

  private constructor(
    readonly length: number,
    /** present.N.key / present.N.value by past input name, when the cache is one pass's presents. */
    private readonly presents: ReadonlyMap<string, Tensor> | undefined,
    host: KvLayers | undefined,
  ) {
    this.host = host;
  }

  static fromPresents(length: number, presents: ReadonlyMap<string, Tensor>): KvCache {
    return new KvCache(length, presents, undefined);
  }

  static fromHost(length: number, layers: KvLayers): KvCache {
    return new KvCache(length, undefined, layers);
  }

  /** The tensor to feed as a layer's past when a pass continues from the whole cache: the present itself where there is one. */
  past(session: OrtSession, dims: ModelDims, layer: number, kv: 'key' | 'value'): Tensor {
    return this.presents?.get(pastName(layer, kv)) ?? kvTensor(session, this.host![layer]![kv], [1, dims.numKeyValueHeads, this.length, dims.headDim]);
  }

  /** Host arrays per layer (downloaded once from the GPU for a GPU-resident cache). */
  async layers(dims: ModelDims): Promise<KvLayers> {
    if (this.host) return this.host;
    const layers: KvLayers = [];
    for (let l = 0; l < dims.numLayers; l++) {
      layers.push({ key: await kvData(this.presents!.get(pastName(l, 'key'))!), value: await kvData(this.presents!.get(pastName(l, 'value'))!) });
    }
    return (this.host = layers);
  }

  /** Frees GPU-resident presents (host memory is left to the garbage collector). */
  dispose(): void {
    for (const t of this.presents?.values() ?? []) if (t.location === 'gpu-buffer') t.dispose();
  }
}

/** KV output data as stored: float32 values, or float16 bit patterns. */
export async function kvData(t: Tensor): Promise<KvArray> {
  const data = await tensorData(t);
  return t.type === 'float16' ? float16Bits(data) : (data as Float32Array);
}

/**
 * Reusable past-KV inputs of one scoring call, per input name: a pass that copies its rows' pasts into one
 * tensor writes them here, since the copy is dead once the pass ran. Each copy was fresh memory, tens of
 * MB a check, and the garbage collections it triggered cost the most where the heap is large.
 */
export class PastBuffers {
  private readonly buffers = new Map<string, KvArray>();

  /** A view of `length` elements for `name`, holding whatever the last pass left there. */
  get(name: string, length: number, float16: boolean): KvArray {
    let buffer = this.buffers.get(name);
    if (buffer === undefined || buffer.length < length) {
      buffer = float16 ? new Uint16Array(length) : new Float32Array(length);
      this.buffers.set(name, buffer);
    }
    return buffer.subarray(0, length);
  }
}
