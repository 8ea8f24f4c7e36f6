/**
 * Whether a WebGPU adapter is a real GPU. A software adapter (Chromium's SwiftShader, Mesa's
 * llvmpipe, any adapter the browser marks as a fallback) runs the proxy's shaders on the CPU, one
 * to two orders of magnitude slower than onnxruntime's WASM backend on the same cores, so
 * `backend: 'auto'` treats it as no GPU.
 */

/** The fields of `GPUAdapterInfo` this module reads; all optional (browsers differ in what they fill in). */
export interface WebGpuAdapterInfoLike {
  vendor?: string;
  architecture?: string;
  device?: string;
  description?: string;
  /** Chromium 131+ reports it here; older browsers on the adapter itself. */
  isFallbackAdapter?: boolean;
}

/** The parts of a `GPUAdapter` this module reads. */
export interface WebGpuAdapterLike {
  info?: WebGpuAdapterInfoLike;
  /** Deprecated location of the same flag (before `info.isFallbackAdapter`). */
  isFallbackAdapter?: boolean;
}

// Names that software rasterisers put in vendor/architecture/description: Chromium's bundled SwiftShader
// ("google"/"swiftshader"), Mesa's llvmpipe and lavapipe, Microsoft's WARP ("Microsoft Basic Render Driver").
const SOFTWARE_NAMES = [/swiftshader/i, /llvmpipe/i, /lavapipe/i, /softpipe/i, /basic render driver/i, /\bwarp\b/i];

/** Why an adapter is a software (CPU) adapter, or null when it looks like a real GPU. */
export function softwareAdapterReason(adapter: WebGpuAdapterLike): string | null {
  const info = adapter.info ?? {};
  const described = [info.vendor, info.architecture, info.device, info.description].filter((s): s is string => typeof s === 'string' && s.length > 0);
  const label = described.length > 0 ? ` (${described.join(', ')})` : '';
  if (info.isFallbackAdapter === true || adapter.isFallbackAdapter === true) return `the adapter is a fallback (software) adapter${label}`;
  for (const text of described) {
    const name = SOFTWARE_NAMES.find((pattern) => pattern.test(text));
    if (name) return `the adapter is the software renderer ${text.match(name)![0]}${label}`;
  }
  return null;
}
