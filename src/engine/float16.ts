/**
 * IEEE 754 half precision, for fp16 models: onnxruntime hands float16 tensors over as raw 16-bit
 * patterns (Uint16Array), which the scorer widens to float32 before its log-softmax.
 */

/** Widens half-precision bit patterns to float32 values (subnormals, infinities and NaN included). */
export function float16ToFloat32(bits: Uint16Array): Float32Array {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) {
    const h = bits[i]!;
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) out[i] = sign * frac * 2 ** -24;
    else if (exp === 0x1f) out[i] = frac ? NaN : sign * Infinity;
    else out[i] = sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  return out;
}

/** The 16-bit patterns of a float16 tensor's data, whether it arrived as Uint16Array or Float16Array. */
export function float16Bits(data: ArrayBufferView): Uint16Array {
  return data instanceof Uint16Array ? data : new Uint16Array(data.buffer, data.byteOffset, data.byteLength / 2);
}
