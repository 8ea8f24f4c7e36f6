/**
 * The part of the `webgpu` package (Dawn's Node bindings) that lab/bench/dawn.ts uses. The package is not a
 * dependency (132 MB of binaries for every platform, for one benchmark backend): `bash lab/bench/gpu/pack.sh`
 * installs it with `npm install --no-save webgpu@0.6.2`, and its own types take over when it is there.
 */
declare module 'webgpu' {
  /** A `navigator.gpu` for Node; `options` are Dawn toggles such as `backend=vulkan`. */
  export function create(options: string[]): unknown;
  /** The WebGPU constructors and constants (GPUBufferUsage, GPUQueue, ...) to put on globalThis. */
  export const globals: Record<string, unknown>;
}
