import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { planBackends } from '../../src/core/backend-plan.js';
import { softwareAdapterReason, type WebGpuAdapterLike } from '../../src/core/webgpu-adapter.js';

const FIXTURES = JSON.parse(readFileSync(new URL('../fixtures/webgpu-adapters.json', import.meta.url), 'utf8')) as Record<'software' | 'hardware', Record<string, WebGpuAdapterLike>>;

const gpuWith = (adapter: WebGpuAdapterLike) => ({ requestAdapter: async () => adapter });

describe('software WebGPU adapters', () => {
  it.each(Object.entries(FIXTURES.software))('recognises %s as a software adapter', (_name, adapter) => {
    expect(softwareAdapterReason(adapter)).toMatch(/fallback|software/);
  });

  it.each(Object.entries(FIXTURES.hardware))('treats %s as a real GPU', (_name, adapter) => {
    expect(softwareAdapterReason(adapter)).toBeNull();
  });

  it('names the adapter in the reason', () => {
    expect(softwareAdapterReason(FIXTURES.software['debian-chromium-swiftshader']!)).toBe('the adapter is a fallback (software) adapter (google, swiftshader)');
    expect(softwareAdapterReason(FIXTURES.software['mesa-llvmpipe']!)).toBe('the adapter is the software renderer llvmpipe (mesa, llvmpipe (LLVM 15.0.6, 256 bits))');
  });

  it("backend 'auto' uses WASM on a software adapter and says why", async () => {
    const plan = await planBackends('auto', { isNode: false, gpu: gpuWith(FIXTURES.software['debian-chromium-swiftshader']!) });
    expect(plan.backends).toEqual(['wasm']);
    expect(plan.fallbackReason).toMatch(/^WebGPU: the adapter is a fallback \(software\) adapter \(google, swiftshader\), which runs on the CPU slower than WASM; pass backend: 'webgpu'/);
  });

  it("backend 'auto' keeps WebGPU first on a hardware adapter", async () => {
    await expect(planBackends('auto', { isNode: false, gpu: gpuWith(FIXTURES.hardware['nvidia-ampere']!) })).resolves.toEqual({ backends: ['webgpu', 'wasm'], fallbackReason: null });
  });

  it("backend 'webgpu' still forces a software adapter", async () => {
    await expect(planBackends('webgpu', { isNode: false, gpu: gpuWith(FIXTURES.software['debian-chromium-swiftshader']!) })).resolves.toEqual({ backends: ['webgpu'], fallbackReason: null });
  });
});
