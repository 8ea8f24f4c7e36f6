/**
 * The fault matrix of test/engine/fault-matrix.test.ts in the system Chromium, through the real worker: the
 * library's worker entry (src/worker.ts) served by the Vite dev server, onnxruntime-web on wasm (1 thread),
 * the tiny guard model. Cells: worker killed (the page terminates the Worker the guard's factory made:
 * no event, the heartbeat finds it), worker throws (an uncaught error inside the worker), abort, timeout
 * (the worker wedged past timeoutMs) and dispose, each mid-check, alone and with two other calls in flight.
 * Every promise settles (none outlives its hang deadline), a privileged call is never allowed by a failure
 * (a failure-policy block under the default policy, or the caller's own typed abort/dispose rejection), calls
 * in flight on a worker that dies are re-sent to a fresh one and answered by the model, and the next check on
 * the same guard gets the model's verdict (after dispose: rejected, 'disposed').
 *
 * One Chromium, one page. Each new worker costs 8-15 s of CPU here, most of it onnxruntime-web's start, and
 * each killed or throws cell needs one (its calls are re-sent to a new worker). So the cells run as three
 * chains on three guards, side by side, and each chain's next cell runs on the worker its previous cell's
 * next check started: seven worker starts in all.
 */
import { fileURLToPath } from 'node:url';
import type { JSHandle, Page, Worker } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeTinyGuardModel, TINY_GUARD_MODEL_AVAILABLE } from '../engine/tiny-guard-model.js';
import { CAN_RUN, keepOffline, launchChromium, startDevServer, watchConsole, type BrowserHandle, type DemoServer } from './browser-helpers.js';
import type { CellOutcome, ChainOptions, FaultMatrixPage } from './fault-matrix-page.js';

const SETUP_TIMEOUT_MS = 120_000;
// A cell's test also waits for the cells before it in its chain (the chains start in beforeAll).
const CELL_TIMEOUT_MS = 300_000;
const MODEL_URL = '/fault-model/';
const PAGE_MODULE = fileURLToPath(new URL('./fault-matrix-page.ts', import.meta.url));
// The page module's API on the page's globalThis (FAULT_MATRIX_GLOBAL in fault-matrix-page.ts).
const PAGE_API = '__edgearmorFaultMatrix';

// The check after a crash starts a new worker: starting onnxruntime-web and loading the model took up to 48 s
// here with three workers starting at once on 2 cores shared with other jobs, past the default 30 s.
const RESTART_TIMEOUT_MS = 120_000;
// A terminated browser Worker sends no event; the heartbeat finds it. Above a new worker's longest stall (its
// first check runs as one synchronous stretch: 3.5 s here with three workers starting on 2 busy cores), below
// the default 15 s so the killed cells take less long.
const KILL_HEARTBEAT_MS = 10_000;
// The timeout cells: far above a warm small check, below how long the worker is wedged (WEDGE_MS).
const SHORT_TIMEOUT_MS = 4_000;
// Ends before a check sent at the timeout would time out too, so the next check finds the worker free.
const WEDGE_MS = 6_000;
// A wedged worker answers its cancelled calls when it is free again: slow, not stuck, so the stuck-worker
// watchdog (its own fault, worker-kill.test.ts) stays out of the timeout cells.
const WEDGED_GRACE_MS = 30_000;
// The next check after a timeout can meet the tail of the cancelled calls' last inference run (as in the Node matrix).
const TIMEOUT_RETRIES = 3;

type Fault = 'killed' | 'throws' | 'abort' | 'timeout' | 'dispose';
interface Cell {
  fault: Fault;
  others: 0 | 2;
}
/** Cells run in order on one guard. */
interface Chain {
  options: ChainOptions;
  /** Check small calls until the model answers before the first cell. */
  warmUp: boolean;
  /** Start the guard once the chains listed before it have their guards ready. */
  startsAfterOthers?: boolean;
  cells: Cell[];
}

/**
 * Three guards, each running its cells in order on the worker its previous cell left, side by side. Each
 * crash guard gets one killed and one throws cell (a restart after each), so the two take about as long.
 */
const CHAINS: Record<string, Chain> = {
  'crash guard A': {
    options: { timeoutMs: RESTART_TIMEOUT_MS, heartbeatTimeoutMs: KILL_HEARTBEAT_MS },
    warmUp: false,
    cells: [
      { fault: 'killed', others: 0 },
      { fault: 'throws', others: 2 },
      { fault: 'abort', others: 0 },
      { fault: 'dispose', others: 2 },
    ],
  },
  'crash guard B': {
    options: { timeoutMs: RESTART_TIMEOUT_MS, heartbeatTimeoutMs: KILL_HEARTBEAT_MS },
    warmUp: false,
    cells: [
      { fault: 'throws', others: 0 },
      { fault: 'killed', others: 2 },
      { fault: 'abort', others: 2 },
    ],
  },
  // Warmed up first: a new worker's first check takes seconds, near SHORT_TIMEOUT_MS. Started once the crash
  // guards are ready: its chain is the short one, and three workers starting at once slow each other down.
  'timeout guard': {
    options: { timeoutMs: SHORT_TIMEOUT_MS, stuckWorkerGraceMs: WEDGED_GRACE_MS },
    warmUp: true,
    startsAfterOthers: true,
    cells: [
      { fault: 'timeout', others: 0 },
      { fault: 'timeout', others: 2 },
      { fault: 'dispose', others: 0 },
    ],
  },
};

const cellName = ({ fault, others }: Cell) => `${fault}${others ? ` with ${others} other calls in flight` : ''}`;

/** What the target call must settle to. */
const EXPECTED: Record<Fault, object> = {
  // The calls in flight on a dead worker are sent once more to a fresh one, and the model answers them.
  killed: { kind: 'verdict', verdict: { reason: 'model' } },
  throws: { kind: 'verdict', verdict: { reason: 'model' } },
  abort: { kind: 'rejected', name: 'GuardAbortedError', code: 'aborted', typed: true },
  timeout: { kind: 'verdict', verdict: { decision: 'block', reason: 'failure-policy', error: { name: 'GuardTimeoutError', code: 'timeout' } } },
  dispose: { kind: 'rejected', name: 'DisposedError', code: 'disposed', typed: true },
};

/**
 * Playwright's handles of the page's workers by name (the page names each after its guard), read as each
 * worker starts: later, a worker busy starting onnxruntime-web would answer only when done.
 */
function trackWorkers(page: Page): (name: string) => Worker {
  const byName = new Map<string, Worker>();
  page.on('worker', (worker) => {
    worker.evaluate(() => (globalThis as unknown as { name: string }).name).then(
      (name) => byName.set(name, worker),
      () => undefined,
    );
  });
  return (name) => {
    const worker = byName.get(name);
    if (!worker) throw new Error(`no worker named ${name} among ${[...byName.keys()].join(', ')}`);
    return worker;
  };
}

/** Sends one cell's calls on its chain's guard, injects the fault mid-check, and collects how everything settled. */
async function runCell(api: JSHandle<FaultMatrixPage>, workerNamed: (name: string) => Worker, chain: string, { fault, others }: Cell): Promise<CellOutcome> {
  // A wedged worker (a wasm or WebGPU run that does not yield): the cell's checks cannot finish within
  // timeoutMs. Wedged before they are sent: a wedge sent after them lands only when the worker next reads
  // its messages, and a fast machine finished the target check first. Atomics.wait blocks the worker's
  // thread as a long run would, without taking a core from the other guards.
  if (fault === 'timeout') {
    const current = await api.evaluate((fm, c) => fm.currentWorker(c), chain);
    await workerNamed(current).evaluate((ms) => {
      setTimeout(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms), 0);
    }, WEDGE_MS);
  }
  const workerName = await api.evaluate((fm, [c, n]) => fm.launch(c, n), [chain, others] as const);
  if (fault === 'killed') await api.evaluate((fm, c) => fm.terminateWorker(c), chain);
  if (fault === 'abort') await api.evaluate((fm, c) => fm.abort(c), chain);
  if (fault === 'dispose') await api.evaluate((fm, c) => fm.dispose(c), chain);
  // As demo-dev.test.ts's crash test: an error thrown from a task of the worker's own event loop, uncaught.
  if (fault === 'throws') {
    await workerNamed(workerName).evaluate(() => {
      setTimeout(() => {
        throw new Error('simulated uncaught error in the worker');
      }, 0);
    });
  }
  return api.evaluate((fm, [c, retries]) => fm.collect(c, retries), [chain, fault === 'timeout' ? TIMEOUT_RETRIES : 0] as const);
}

/** A promise with its settle functions. */
interface Deferred<T> {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

/** A Deferred whose rejection is read later (by its cell's test), so it never counts as unhandled. */
function deferred<T>(): Deferred<T> {
  let resolve: (value: T) => void = () => undefined;
  let reject: (error: unknown) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** Starts a chain's guard (settling `ready`), then runs its cells in order, settling each cell's outcome or the error that stopped the chain. */
async function runChain(
  api: JSHandle<FaultMatrixPage>,
  workerNamed: (name: string) => Worker,
  name: string,
  chain: Chain,
  ready: Deferred<void>,
  outcomes: Array<Deferred<CellOutcome>>,
): Promise<void> {
  let i = 0;
  try {
    const status = await api.evaluate((fm, [c, url, o]) => fm.start(c, url, o), [name, MODEL_URL, chain.options] as const);
    ready.resolve();
    if (status.backend !== 'wasm') throw new Error(`the ${name} runs on ${String(status.backend)}, not wasm`);
    const warm = chain.warmUp ? await api.evaluate((fm, c) => fm.warmUp(c), name) : null;
    if (warm && (warm.kind !== 'verdict' || warm.verdict.reason !== 'model')) throw new Error(`the ${name}'s first checks got no model verdict: ${JSON.stringify(warm)}`);
    for (; i < chain.cells.length; i++) outcomes[i]!.resolve(await runCell(api, workerNamed, name, chain.cells[i]!));
  } catch (error) {
    ready.reject(error);
    for (; i < chain.cells.length; i++) outcomes[i]!.reject(error);
  }
}

describe.skipIf(!(CAN_RUN && TINY_GUARD_MODEL_AVAILABLE))('the fault matrix through the worker in Chromium', () => {
  let server: DemoServer;
  let browser: BrowserHandle;
  let external: string[];
  let errors: string[];
  const outcomes = new Map<string, Promise<CellOutcome>>();

  beforeAll(async () => {
    server = await startDevServer({ serve: { [MODEL_URL]: await makeTinyGuardModel() } });
    browser = await launchChromium({ webgpu: false });
    external = await keepOffline(browser.context);
    const page = await browser.context.newPage();
    errors = watchConsole(page, [/simulated uncaught error in the worker/]);
    const workerNamed = trackWorkers(page);
    await page.goto(`${server.url}harness.html`);
    await page.addScriptTag({ type: 'module', url: `/@fs${PAGE_MODULE}` });
    const api = (await page.waitForFunction((name) => (globalThis as unknown as Record<string, FaultMatrixPage | undefined>)[name], PAGE_API)) as JSHandle<FaultMatrixPage>;

    const ready: Promise<unknown>[] = [];
    for (const [name, chain] of Object.entries(CHAINS)) {
      const cells = chain.cells.map((cell) => {
        const outcome = deferred<CellOutcome>();
        outcomes.set(`${name}: ${cellName(cell)}`, outcome.promise);
        return outcome;
      });
      const guardReady = deferred<void>();
      const before = chain.startsAfterOthers ? Promise.allSettled(ready) : Promise.resolve([]);
      ready.push(guardReady.promise);
      void before.then(() => runChain(api, workerNamed, name, chain, guardReady, cells));
    }
  }, SETUP_TIMEOUT_MS);

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  for (const [chain, { cells }] of Object.entries(CHAINS)) {
    for (const cell of cells) {
      it(`${cellName(cell)}: every promise settles, no privileged call is allowed, the next check works (${chain})`, async () => {
        const { all, next } = await outcomes.get(`${chain}: ${cellName(cell)}`)!;
        expect(all).toHaveLength(1 + cell.others);
        for (const s of all) {
          expect(s.kind).not.toBe('hang');
          // A failure never allows a privileged call: it blocks by the policy, or rejects with the caller's own typed abort/dispose.
          if (s.kind === 'verdict' && s.verdict.reason !== 'model') expect(s.verdict).toMatchObject({ decision: 'block', reason: 'failure-policy' });
          if (s.kind === 'rejected') {
            expect(['aborted', 'disposed']).toContain(s.code);
            expect(s.typed).toBe(true);
          }
        }
        expect(all[0]).toMatchObject(EXPECTED[cell.fault]);
        // A crash: every call on that worker is re-sent and answered by the model; dispose: every call on that guard is rejected.
        if (cell.fault === 'killed' || cell.fault === 'throws' || cell.fault === 'dispose') for (const s of all) expect(s).toMatchObject(EXPECTED[cell.fault]);

        if (cell.fault === 'dispose') expect(next).toEqual(EXPECTED.dispose);
        else expect(next).toMatchObject({ kind: 'verdict', verdict: { reason: 'model' } });
      }, CELL_TIMEOUT_MS);
    }
  }

  it('logs no unexpected console error and sends nothing off 127.0.0.1', async () => {
    await Promise.allSettled(outcomes.values());
    expect(errors).toEqual([]);
    expect(external).toEqual([]);
  }, CELL_TIMEOUT_MS);
});
