/**
 * EdgeArmor in your own Playwright suites: assert that a conversation and a proposed call are
 * blocked or allowed by the guard running in a real browser (WebGPU where the runner has it).
 *
 * Two halves, one module, no Playwright import (it takes any object with Playwright's `Page` shape):
 * - in the browser, a test page of your app calls {@link installGuardHarness} (it must be able to
 *   start the guard's worker and serve the model and onnxruntime-web's wasm files itself);
 * - in the test, {@link startGuardPage} opens that page and loads a guard, then
 *   {@link expectBlocked} / {@link expectAllowed} check calls through it.
 *
 * @example
 * ```ts
 * // test-guard.html's script (bundled by your app):
 * import { installGuardHarness } from 'edgearmor/testing';
 * installGuardHarness({ worker: () => new Worker(new URL('./guard.worker.ts', import.meta.url), { type: 'module' }) });
 *
 * // agent.spec.ts:
 * import { startGuardPage, expectBlocked } from 'edgearmor/testing';
 * await startGuardPage(page, { url: 'http://127.0.0.1:5173/test-guard.html', modelUrl: '/models/edgearmor-proxy/' });
 * await expectBlocked(page, { messages, action: { name: 'send_money', arguments: { iban: 'XX00' } } });
 * ```
 */
import { createGuard, type CreateGuardOptions, type WorkerGuard } from './page/create-guard.js';
import { settle, type BackendPreference, type WireResult } from './wire/protocol.js';
import { EdgeArmorError, InvalidOptionsError, type WireError } from './core/errors.js';
import type { GuardStatus } from './core/guard-api.js';
import type { GuardOptions } from './core/options.js';
import type { Verdict } from './core/verdict.js';
import type { ScoringMode } from './core/runtime-options.js';
import type { ModelManifest, ModelVariant } from './engine/model-files.js';
import type { RemoteProxyOptions } from './engine/remote-proxy.js';

/** The name of the harness object on the page's `globalThis`. */
export const HARNESS_GLOBAL = '__edgearmorHarness';

/** What {@link startGuardPage} asks the page's harness to load; plain data (it crosses into the page). */
export interface HarnessStartOptions {
  /** The model directory's URL, relative to the page. @defaultValue the harness's default ('models/edgearmor-proxy/') */
  modelUrl?: string;
  /** @defaultValue 'auto' */
  backend?: BackendPreference;
  /** @defaultValue 'q4' */
  modelVariant?: ModelVariant;
  /** Guard options (tau, privilegedTools, ...). */
  guard?: GuardOptions;
  /** Score on a vLLM server instead (it must allow the page's origin); see createGuard. */
  remoteProxy?: RemoteProxyOptions;
  /** The manifest the model's files must match, when `modelUrl` has none (hub models). */
  modelManifest?: ModelManifest;
  /** Render guard calls with this Jinja chat template instead of the model's. */
  chatTemplate?: string;
  /** The scoring plan (see createGuard). @defaultValue 'auto' */
  scoring?: ScoringMode;
}

/** A result that crossed from the page: the value, or the error as data. */
export type HarnessResult<T> = WireResult<T>;

/** The harness a test page exposes at `globalThis.__edgearmorHarness`. */
export interface GuardHarness {
  start(options: HarnessStartOptions): Promise<HarnessResult<GuardStatus>>;
  check(input: unknown): Promise<HarnessResult<Verdict>>;
  status(): Promise<HarnessResult<GuardStatus>>;
  dispose(): Promise<void>;
  /** The guard, for page-side code that wants more than check (defend, scoreSentenceAblations). */
  readonly guard: WorkerGuard | null;
}

/** Options of {@link installGuardHarness}: what the page knows and the test does not. */
export interface InstallHarnessOptions extends Pick<CreateGuardOptions, 'worker' | 'wasmPaths' | 'wasmThreads'> {
  /** @defaultValue 'models/edgearmor-proxy/' */
  defaultModelUrl?: string;
}

/** Browser side: exposes a guard harness on `globalThis` for {@link startGuardPage}; returns it. */
export function installGuardHarness(options: InstallHarnessOptions = {}): GuardHarness {
  let guard: WorkerGuard | null = null;
  const harness: GuardHarness = {
    get guard() {
      return guard;
    },
    async start(start) {
      await guard?.dispose();
      guard = createGuard({
        ...(start.guard ?? {}),
        ...(options.worker !== undefined ? { worker: options.worker } : {}),
        ...(options.wasmPaths !== undefined ? { wasmPaths: options.wasmPaths } : {}),
        ...(options.wasmThreads !== undefined ? { wasmThreads: options.wasmThreads } : {}),
        modelUrl: start.modelUrl ?? options.defaultModelUrl ?? 'models/edgearmor-proxy/',
        ...(start.backend !== undefined ? { backend: start.backend } : {}),
        ...(start.modelVariant !== undefined ? { modelVariant: start.modelVariant } : {}),
        ...(start.remoteProxy !== undefined ? { remoteProxy: start.remoteProxy } : {}),
        ...(start.modelManifest !== undefined ? { modelManifest: start.modelManifest } : {}),
        ...(start.chatTemplate !== undefined ? { chatTemplate: start.chatTemplate } : {}),
        ...(start.scoring !== undefined ? { scoring: start.scoring } : {}),
      });
      const g = guard;
      return settle(() => g.ready);
    },
    check: (input) =>
      settle(async () => {
        if (!guard) throw new InvalidOptionsError('the harness has no guard: call start() first', { option: 'start' });
        return guard.check(input);
      }),
    status: () =>
      settle(async () => {
        if (!guard) throw new InvalidOptionsError('the harness has no guard: call start() first', { option: 'start' });
        return guard.status();
      }),
    async dispose() {
      await guard?.dispose();
      guard = null;
    },
  };
  (globalThis as Record<string, unknown>)[HARNESS_GLOBAL] = harness;
  return harness;
}

/** The part of Playwright's `Page` these helpers use. */
export interface PageLike {
  goto(url: string): Promise<unknown>;
  evaluate<R, A>(fn: (arg: A) => R | Promise<R>, arg: A): Promise<R>;
  waitForFunction<A>(fn: (arg: A) => unknown, arg: A, options?: { timeout?: number }): Promise<unknown>;
}

/** Options of {@link startGuardPage}. */
export interface StartGuardPageOptions extends HarnessStartOptions {
  /** The page that calls installGuardHarness; omitted, the current page is used. */
  url?: string;
  /** How long to wait for the harness to appear. @defaultValue 30000 */
  harnessTimeoutMs?: number;
}

/** An EdgeArmor error that happened in the page, rebuilt with its code and details. */
export class PageGuardError extends EdgeArmorError {
  constructor(error: WireError) {
    super(error.code, `${error.name} (${error.code}) in the page: ${error.message}`, error.details);
    this.name = 'PageGuardError';
  }
}

function unwrap<T>(result: HarnessResult<T>): T {
  if (result.ok) return result.value;
  throw new PageGuardError(result.error);
}

const DEFAULT_HARNESS_TIMEOUT_MS = 30_000;

/** Opens the harness page (when `url` is given), starts a guard in it and resolves with its status once the model is loaded. */
export async function startGuardPage(page: PageLike, options: StartGuardPageOptions = {}): Promise<GuardStatus> {
  const { url, harnessTimeoutMs, ...start } = options;
  if (url !== undefined) await page.goto(url);
  await page.waitForFunction((name) => name in globalThis, HARNESS_GLOBAL, { timeout: harnessTimeoutMs ?? DEFAULT_HARNESS_TIMEOUT_MS });
  return unwrap(await page.evaluate(([name, opts]) => (globalThis as unknown as Record<string, GuardHarness>)[name]!.start(opts), [HARNESS_GLOBAL, start] as const));
}

/** Checks one call with the page's guard and returns the verdict. */
export async function checkInPage(page: PageLike, input: unknown): Promise<Verdict> {
  return unwrap(await page.evaluate(([name, i]) => (globalThis as unknown as Record<string, GuardHarness>)[name]!.check(i), [HARNESS_GLOBAL, input] as const));
}

function describeVerdict(v: Verdict): string {
  const spans = v.flagged.map((f) => `${f.toolName ?? 'tool'} messages[${f.messageIndex}]`).join(', ') || 'none';
  // The verdict's message ends with a full stop; callers add their own after this summary.
  return `decision=${v.decision}, reason=${v.reason}, flagged=[${spans}], score=${v.score ?? 'null'}${v.message ? `; ${v.message.replace(/\.$/, '')}` : ''}`;
}

/** Options of {@link expectBlocked} / {@link expectAllowed}. */
export interface ExpectVerdictOptions {
  /**
   * Accept a decision made by the failure policy (the guard timed out, the context was too long, the
   * model failed to run) instead of the model. Off by default: a broken setup whose failure policy
   * blocks every call would otherwise pass every `expectBlocked`.
   * @defaultValue false
   */
  allowFailurePolicy?: boolean;
}

function expectDecision(verdict: Verdict, expected: 'allow' | 'block', options: ExpectVerdictOptions): Verdict {
  const wanted = expected === 'block' ? 'blocked' : 'allowed';
  if (verdict.decision !== expected) {
    throw new Error(`expected the call to be ${wanted}, but the guard ${expected === 'block' ? 'allowed' : 'blocked'} it: ${describeVerdict(verdict)}`);
  }
  if (verdict.reason === 'failure-policy' && options.allowFailurePolicy !== true) {
    const cause = verdict.error ? ` (${verdict.error.code}: ${verdict.error.message})` : '';
    throw new Error(
      `expected the call to be ${wanted} by the guard's model, but the guard failed${cause} and its failure policy decided: ${describeVerdict(verdict)}. ` +
        'Fix the setup (a timeout often means a software WebGPU adapter or a slow runner), or pass { allowFailurePolicy: true } if this test means to exercise the failure policy.',
    );
  }
  return verdict;
}

/** Asserts that the page's guard blocks this call by its model's judgement; returns the verdict, throws with the verdict's summary otherwise (also when the failure policy blocked it, unless `allowFailurePolicy`). */
export async function expectBlocked(page: PageLike, input: unknown, options: ExpectVerdictOptions = {}): Promise<Verdict> {
  return expectDecision(await checkInPage(page, input), 'block', options);
}

/** Asserts that the page's guard allows this call by its model's judgement; returns the verdict, throws with the verdict's summary otherwise (also when the failure policy allowed it, unless `allowFailurePolicy`). */
export async function expectAllowed(page: PageLike, input: unknown, options: ExpectVerdictOptions = {}): Promise<Verdict> {
  return expectDecision(await checkInPage(page, input), 'allow', options);
}
