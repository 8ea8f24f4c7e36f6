/**
 * The benchmark's Chromium backends: serves lab/bench/browser/ with Vite (the demo's config: onnxruntime-web's
 * runtime under /ort/, cross-origin isolation for wasm threads) plus the benchmark model under
 * /bench-model/, opens it in the system Chromium through Playwright and runs the cases in the page.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { createServer } from 'vite';
import type { Backend } from '../../src/engine/ort-session.js';
import type { ModelDims, ScoreSequence } from '../../src/engine/scorer.js';
import { memoryFields, PATHS, type BenchCase, type CaseResult, type CaseSpec, type PathName } from './cases.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../chromium.config.js';
import { staticDir } from '../../vite.config.js';

export { CHROMIUM_PATH };

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** How long one backend's cases may take in the page (software WebGPU is slow). */
const PAGE_TIMEOUT_MS = 60 * 60 * 1000;

const RSS_SAMPLE_MS = 2;

/** Linux: the pids of Chromium processes of the given types (--type=renderer, gpu-process) started by this process. */
function chromiumPids(types: readonly string[]): number[] {
  const parent = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Field 4 of /proc/<pid>/stat, after the parenthesised command name.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parent.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // The process ended while we looked.
    }
  }
  const descends = (pid: number): boolean => {
    for (let p = parent.get(pid); p !== undefined && p > 1; p = parent.get(p)) if (p === process.pid) return true;
    return false;
  };
  return [...parent.keys()].filter((pid) => {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      return descends(pid) && types.some((t) => cmdline.includes(`--type=${t}`));
    } catch {
      return false;
    }
  });
}

function rssBytes(pids: readonly number[]): number {
  let total = 0;
  for (const pid of pids) {
    try {
      total += Number(/VmRSS:\s*(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
    } catch {
      // Gone: counts nothing.
    }
  }
  return total;
}

/**
 * Peak RSS of the page's renderer process(es) between `start()` and `stop()`, sampled from /proc: what
 * the Node backends' RSS delta measures, for a page (which cannot see its own process). On WebGPU the
 * GPU process counts too (a software adapter keeps its buffers there; a real GPU's memory is not RSS).
 * Linux only.
 */
function chromiumMemoryProbe(backend: BrowserBenchRequest['backend']): { start(): void; stop(): number } | null {
  const types = backend === 'webgpu' ? ['renderer', 'gpu-process'] : ['renderer'];
  if (!existsSync('/proc/self/status')) return null;
  let pids: number[] = [];
  let base = 0;
  let peak = 0;
  let timer: ReturnType<typeof setInterval> | undefined;
  return {
    start() {
      pids = chromiumPids(types);
      base = peak = rssBytes(pids);
      timer = setInterval(() => (peak = Math.max(peak, rssBytes(pids))), RSS_SAMPLE_MS);
    },
    stop() {
      clearInterval(timer);
      peak = Math.max(peak, rssBytes(pids));
      return (peak - base) / 2 ** 20;
    },
  };
}

/** What the page is asked to measure. */
export interface BrowserBenchRequest {
  backend: Exclude<Backend, 'node'>;
  threads?: number;
  dims: ModelDims;
  cases: Array<BenchCase & { spec: CaseSpec; reps: number }>;
}

/** One path's memory measurement on one case, in a fresh page. */
export interface BrowserMemoryRequest {
  backend: Exclude<Backend, 'node'>;
  threads?: number;
  dims: ModelDims;
  sequences: ScoreSequence[];
  path: PathName;
}

/** What a Chromium backend measured, and on what. */
export interface BrowserBenchResult {
  results: CaseResult[];
  browser: string;
  adapter: string | null;
}

/**
 * Runs `request`'s cases in a fresh Chromium page; on Linux the page's memory is the renderer's peak RSS
 * (chromiumMemoryProbe), elsewhere it reports none. `modelDir` holds the benchmark model (onnx/model.onnx, onnx/matmul.onnx).
 */
export async function runInChromium(request: BrowserBenchRequest & { modelDir: string; log?: (line: string) => void }): Promise<BrowserBenchResult> {
  const { modelDir, log, ...pageRequest } = request;
  const server = await createServer({
    configFile: resolve(ROOT, 'vite.config.ts'),
    root: resolve(ROOT, 'lab/bench/browser'),
    logLevel: 'warn',
    server: { port: 0, host: '127.0.0.1', hmr: false },
    plugins: [{ name: 'bench-model', configureServer: (s) => void s.middlewares.use(staticDir('/bench-model/', resolve(modelDir))) }],
  });
  await server.listen();
  try {
    return await measureInChromium(server.resolvedUrls?.local[0], pageRequest, log);
  } finally {
    await server.close();
  }
}

async function measureInChromium(url: string | undefined, pageRequest: BrowserBenchRequest, log: ((line: string) => void) | undefined): Promise<BrowserBenchResult> {
  const browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: CHROMIUM_ARGS });
  const probe = chromiumMemoryProbe(pageRequest.backend);
  // A fresh context (and so renderer process) per page: the memory pages must not share a wasm heap.
  const openPage = async () => {
    if (!url) throw new Error('the Vite server reported no local URL');
    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(PAGE_TIMEOUT_MS);
    page.on('console', (m) => m.type() === 'error' && log?.(`page: ${m.text()}`));
    if (probe) {
      await page.exposeFunction('edgearmorBenchMemoryStart', () => probe.start());
      await page.exposeFunction('edgearmorBenchMemoryStop', () => probe.stop());
    }
    await page.goto(url);
    await page.waitForFunction(() => window.edgearmorBench?.ready === true);
    return { page, close: () => context.close() };
  };
  try {
    const timing = await openPage();
    const out = await timing.page.evaluate((req) => window.edgearmorBench.run(req), pageRequest);
    await timing.close();
    const { backend, threads, dims } = pageRequest;
    const results = [];
    for (const [k, r] of out.results.entries()) {
      let mem: Record<PathName, number> | null = null;
      if (probe) {
        mem = { prefix: 0, naive: 0, transformersjs: 0 };
        for (const path of Object.keys(PATHS) as PathName[]) {
          const m = await openPage();
          const req: BrowserMemoryRequest = { backend, ...(threads !== undefined ? { threads } : {}), dims, sequences: pageRequest.cases[k]!.sequences, path };
          mem[path] = await m.page.evaluate((q) => window.edgearmorBench.memory(q), req);
          await m.close();
        }
      }
      const result = { ...r, ...memoryFields(mem) };
      log?.(`${result.backend} ${result.tokens}/${result.spans}: ${JSON.stringify(result)}`);
      results.push(result);
    }
    return { results, browser: `Chromium ${browser.version()} (${out.userAgent})`, adapter: out.adapter };
  } finally {
    await browser.close();
  }
}
