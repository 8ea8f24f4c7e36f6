/**
 * Shared pieces of the browser tests: the system Chromium (SETUP.md flags), the demo served by
 * Vite (dev server or production build + preview) on 127.0.0.1, a network guard that aborts every
 * request leaving 127.0.0.1, a console watcher, and the comparison of a browser verdict with Node's.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type ConsoleMessage, type Page } from 'playwright-core';
import { build, createServer, preview, type Plugin } from 'vite';
import { expect } from 'vitest';
import type { Verdict } from '../../src/core/verdict.js';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../../chromium.config.js';
import { staticDir } from '../../vite.config.js';
import { requirement } from '../requirements.js';

export { CHROMIUM_ARGS, CHROMIUM_PATH };

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CONFIG_FILE = resolve(ROOT, 'vite.config.ts');

const EMBEDDED_DIR = resolve(ROOT, 'public/models/edgearmor-proxy');
const DEV_DIR = resolve(ROOT, '.dev-model');
/** Whether the trained embedded model exists (then the travel/injection case must be flagged). */
export const HAS_REAL_MODEL = existsSync(join(EMBEDDED_DIR, 'manifest.json'));
/** The model directory the Node side loads: the same files the page fetches. */
export const MODEL_DIR = HAS_REAL_MODEL ? EMBEDDED_DIR : DEV_DIR;
/** The model URL the page uses for those files. */
export const PAGE_MODEL_URL = HAS_REAL_MODEL ? 'models/edgearmor-proxy/' : '/dev-model/';
/** Whether the browser tests can run here at all. */
export const CAN_RUN = requirement(existsSync(CHROMIUM_PATH), `Chromium (${CHROMIUM_PATH})`) && requirement(existsSync(join(MODEL_DIR, 'manifest.json')), `the model (${MODEL_DIR})`);

/** A persistent Chromium context in a fresh profile directory. */
export interface BrowserHandle {
  context: BrowserContext;
  close(): Promise<void>;
}

/**
 * The tests' Chromium runs WebAssembly on V8's baseline compiler only. Left to tier up, V8 recompiles the hot
 * functions of onnxruntime's 14-27 MB modules with its optimizing compiler on every page and worker that loads
 * them (a fresh profile has no code cache): in a trace of a WebGPU check, more CPU than the check itself, on
 * background threads that the other test worker's file needed. Nothing a browser test asserts depends on the
 * tier: the results are the same, only computed by less optimized code, and the models here are small. The
 * benchmark's Chromium (lab/bench/browser.ts) keeps V8's defaults, so its timings are what users get.
 */
const TEST_ONLY_ARGS = ['--js-flags=--liftoff-only'];

/** Launches the system Chromium with a fresh profile (launchPersistentContext, as extensions need). */
export async function launchChromium(options: { webgpu?: boolean; extraArgs?: string[] } = {}): Promise<BrowserHandle> {
  const dir = await mkdtemp(join(tmpdir(), 'edgearmor-chromium-'));
  // Without --enable-unsafe-webgpu, requestAdapter() returns null here: the guard's automatic WASM fallback.
  const args = [...CHROMIUM_ARGS.filter((a) => options.webgpu !== false || a !== '--enable-unsafe-webgpu'), ...TEST_ONLY_ARGS];
  const context = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [...args, ...(options.extraArgs ?? [])],
    // Playwright disables extensions by default; the extension test loads one.
    ...(options.extraArgs?.some((a) => a.startsWith('--load-extension')) ? { ignoreDefaultArgs: ['--disable-extensions'] } : {}),
  });
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A served demo. */
export interface DemoServer {
  /** Base URL ending in '/'. */
  url: string;
  close(): Promise<void>;
}

function firstLocalUrl(urls: { local: string[] } | null | undefined): string {
  const url = urls?.local[0];
  if (!url) throw new Error('the Vite server reported no local URL');
  return url.endsWith('/') ? url : `${url}/`;
}

/** `vite` (the dev server, as `npm start`) on a random 127.0.0.1 port. */
export async function startDevServer(options: { serve?: Record<string, string> } = {}): Promise<DemoServer> {
  // Extra directories (test fixtures) served raw under URL prefixes, as the config serves the model.
  const plugins = Object.entries(options.serve ?? {}).map(
    ([prefix, dir]): Plugin => ({ name: `serve ${prefix}`, configureServer: (s) => void s.middlewares.use(staticDir(prefix, dir)) }),
  );
  // Each server pre-bundles the dependencies into its own cache: browser test files run two at a time, and two
  // dev servers sharing node_modules/.vite would each rewrite the other's optimized files mid-load.
  const cacheDir = await mkdtemp(join(tmpdir(), 'edgearmor-vite-'));
  const server = await createServer({ configFile: CONFIG_FILE, cacheDir, logLevel: 'warn', plugins, server: { port: 0, host: '127.0.0.1', hmr: false } });
  await server.listen();
  return {
    url: firstLocalUrl(server.resolvedUrls),
    async close() {
      await server.close();
      await rm(cacheDir, { recursive: true, force: true });
    },
  };
}

/** Builds the MV3 example extension into examples/extension/dist/ and returns that directory. */
export async function buildExtension(): Promise<string> {
  await build({ configFile: resolve(ROOT, 'examples/extension/vite.config.ts'), logLevel: 'error' });
  return resolve(ROOT, 'examples/extension/dist');
}

/** `vite build` into dist-demo/, then `vite preview` on a random 127.0.0.1 port. */
export async function startBuiltDemo(): Promise<DemoServer> {
  await build({ configFile: CONFIG_FILE, logLevel: 'error' });
  const server = await preview({ configFile: CONFIG_FILE, logLevel: 'warn', preview: { port: 0, host: '127.0.0.1' } });
  return {
    url: firstLocalUrl(server.resolvedUrls),
    close: () =>
      new Promise<void>((done) => {
        server.httpServer.close(() => done());
      }),
  };
}

/** Aborts every request whose host is not 127.0.0.1 and records it: the demo must work offline. */
export async function keepOffline(context: BrowserContext): Promise<string[]> {
  const attempts: string[] = [];
  await context.route('**', async (route) => {
    const url = new URL(route.request().url());
    if (url.hostname === '127.0.0.1' || ['data:', 'blob:', 'chrome-extension:'].includes(url.protocol)) return route.fallback();
    attempts.push(url.href);
    return route.abort('internetdisconnected');
  });
  return attempts;
}

/** Collects console errors and uncaught page errors, minus the expected ones. */
export function watchConsole(page: Page, expected: RegExp[] = []): string[] {
  const errors: string[] = [];
  const keep = (text: string) => {
    if (!expected.some((re) => re.test(text))) errors.push(text);
  };
  page.on('console', (m: ConsoleMessage) => {
    if (m.type() === 'error') keep(m.text());
  });
  page.on('pageerror', (e) => keep(`pageerror: ${e.message}`));
  return errors;
}

/** Browser and Node scores agree to this (WebGPU's q4 kernels and the CPU's accumulate in different orders). */
const LOGPROB_TOLERANCE = 1e-3;

/** Per-token mean log-probs of every variant and normalised deltas of every span, keyed for comparison. */
function scores(v: Verdict): Record<string, number> {
  const out: Record<string, number> = {};
  // Per action token: the q4 kernels of WebGPU and the CPU accumulate in different orders, and a sum over
  // ~40 tokens adds up those last-digit differences.
  const n = v.attribution?.actionTokenCount ?? 1;
  for (const variant of v.attribution?.variants ?? []) out[`logProbPerToken:${variant.id}`] = variant.logProb / n;
  for (const span of v.attribution?.spans ?? []) out[`spanDelta:${span.messageIndex}`] = span.normalizedDelta;
  if (v.attribution) out['userDelta'] = v.attribution.user.normalizedDelta;
  return out;
}

/** A browser verdict and the Node engine's on the same input: the same decision and flags, every score within 1e-3. */
export function expectClose(browser: Verdict, node: Verdict): void {
  const a = scores(browser);
  const b = scores(node);
  expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort());
  expect(Object.keys(a).length).toBeGreaterThan(2);
  for (const [k, v] of Object.entries(a)) expect(Math.abs(v - b[k]!), k).toBeLessThan(LOGPROB_TOLERANCE);
  expect(browser.decision).toBe(node.decision);
  expect(browser.flagged.map((f) => f.messageIndex)).toEqual(node.flagged.map((f) => f.messageIndex));
}
