/**
 * The benchmark page: `lab/bench/browser.ts` opens it in Chromium and calls `edgearmorBench.run(...)`, which
 * measures each case with the same code as the Node backends (lab/bench/cases.ts) on the page's own
 * onnxruntime-web (wasm or WebGPU). Model files come from this server under /bench-model/.
 */
import { createOrtSession, type OrtSession } from '../../../src/engine/ort-session.js';
import { presentOutputNames } from '../../../src/engine/scorer.js';
import { benchCase, matmulPeakGflops, PATHS, type BenchSession, type CaseResult } from '../cases.js';
import type { BrowserBenchRequest, BrowserMemoryRequest } from '../browser.js';

async function fetchBytes(url: string): Promise<Uint8Array> {
  const res = await fetch(url);
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status}`);
  return new Uint8Array(await res.arrayBuffer());
}

function opener(req: Pick<BrowserBenchRequest, 'backend' | 'threads' | 'dims'>): (bytes: Uint8Array) => Promise<OrtSession> {
  return (bytes) =>
    createOrtSession(bytes, {
      backend: req.backend,
      wasmPaths: '/ort/',
      ...(req.threads !== undefined ? { wasmThreads: req.threads } : {}),
      // As the engine does: on WebGPU the KV cache stays in GPU buffers.
      gpuBufferOutputs: presentOutputNames(req.dims),
    });
}

/**
 * One path's first run on a fresh session in this (fresh) page, with the renderer's peak RSS around it
 * sampled by the harness: the browser's counterpart of the Node backends' RSS delta.
 */
async function memory(req: BrowserMemoryRequest): Promise<number> {
  const session = await opener(req)(await fetchBytes('/bench-model/onnx/model.onnx'));
  let mib = Number.NaN;
  await window.edgearmorBenchMemoryStart!();
  try {
    await PATHS[req.path](session, req.dims, req.sequences);
  } finally {
    mib = await window.edgearmorBenchMemoryStop!();
  }
  await session.release();
  return mib;
}

async function run(req: BrowserBenchRequest): Promise<{ results: CaseResult[]; userAgent: string; adapter: string | null }> {
  const { backend, dims } = req;
  const open = opener(req);
  const [model, matmul] = await Promise.all([fetchBytes('/bench-model/onnx/model.onnx'), fetchBytes('/bench-model/onnx/matmul.onnx')]);
  const name = backend === 'webgpu' ? 'chromium webgpu' : `chromium wasm ${req.threads ?? 'default'} thread(s)`;
  const bs: BenchSession = {
    name,
    create: (): Promise<OrtSession> => open(model),
    matmulPeakGflops: (m) => matmulPeakGflops(() => open(matmul), dims, m),
    // No memoryDelta: onnxruntime-web's wasm heap never shrinks, so paths sharing a page would hide each
    // other's peaks; the harness measures each path's memory in a fresh page instead (memory below).
  };
  const results: CaseResult[] = [];
  for (const c of req.cases) results.push(await benchCase(bs, dims, c.spec, c, c.reps));
  let adapter: string | null = null;
  if (backend === 'webgpu') {
    const gpu = (navigator as Navigator & { gpu?: { requestAdapter(): Promise<{ info?: { vendor: string; architecture: string; description: string } } | null> } }).gpu;
    const info = (await gpu?.requestAdapter())?.info;
    adapter = info ? [info.vendor, info.architecture, info.description].filter(Boolean).join(' ') || 'unnamed adapter' : null;
  }
  return { results, userAgent: navigator.userAgent, adapter };
}

declare global {
  interface Window {
    edgearmorBench: { run: typeof run; memory: typeof memory; ready: true };
    /** Exposed by lab/bench/browser.ts where it can sample the renderer's RSS. */
    edgearmorBenchMemoryStart?: () => Promise<void>;
    edgearmorBenchMemoryStop?: () => Promise<number>;
  }
}
window.edgearmorBench = { run, memory, ready: true };
