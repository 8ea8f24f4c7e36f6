/**
 * The page side of test/browser/fault-matrix.test.ts: loaded into the demo's harness page by the Vite dev
 * server, it starts guards with createGuard on the library's worker entry (src/worker.ts, which Vite serves
 * as a module worker), sends a fault cell's calls, injects the faults a page can (terminate the Worker,
 * abort, dispose), and reports how every call settled as plain data.
 */
import { createGuard, type CreateGuardOptions, type WorkerGuard } from '../../src/page/create-guard.js';
import { EdgeArmorError } from '../../src/core/errors.js';
import type { GuardStatus } from '../../src/core/guard-api.js';
import type { Verdict } from '../../src/core/verdict.js';
import { ortWasmPaths } from '../../src/demo/page-config.js';
import { SLOW, SMALL } from '../fault-cases.js';

/** The name of this module's API on the page's `globalThis` (the test reads it there). */
export const FAULT_MATRIX_GLOBAL = '__edgearmorFaultMatrix';

/** How one call ended, as plain data: a verdict (summarised), a rejection, or nothing before the deadline. */
export type Settled =
  | { kind: 'verdict'; verdict: Pick<Verdict, 'decision' | 'reason'> & { error?: { name: string; code: string } } }
  | { kind: 'rejected'; name: string; code: string; typed: boolean }
  | { kind: 'hang' };

/** Every call of one cell, the target first, and the check sent after them on the same guard. */
export interface CellOutcome {
  all: Settled[];
  next: Settled;
}

/** The guard options a chain of cells runs under (plain data: they cross from the test); timeoutMs bounds every call. */
export type ChainOptions = Pick<CreateGuardOptions, 'heartbeatTimeoutMs' | 'stuckWorkerGraceMs'> & { timeoutMs: number };

/** What the test calls in the page. */
export interface FaultMatrixPage {
  /** Creates a guard whose workers are named `${chain}#1`, `${chain}#2`, ... and waits until its model is loaded. */
  start(chain: string, modelUrl: string, options: ChainOptions): Promise<GuardStatus>;
  /** Checks a small call until the model answers (the first check of a new worker is slow); returns the last outcome. */
  warmUp(chain: string): Promise<Settled>;
  /** Sends the cell's target check (with its own AbortSignal) and `others` more, lets them get under way, and returns the name of the worker running them. */
  launch(chain: string, others: number): Promise<string>;
  /** The name of the guard's current Worker. */
  currentWorker(chain: string): string;
  /** Terminates the guard's current Worker from the page: no event tells the guard. */
  terminateWorker(chain: string): void;
  /** Aborts the target check's signal. */
  abort(chain: string): void;
  /** Disposes the guard without waiting. */
  dispose(chain: string): void;
  /** Waits for every call of the cell, then sends one more check (again after a timeout, at most `timeoutRetries` times). */
  collect(chain: string, timeoutRetries: number): Promise<CellOutcome>;
}

// The guard answers every call within its timeoutMs; a call still pending this much later is a hang.
const HANG_MARGIN_MS = 20_000;
// How long the cell's calls run before the fault: well inside the slow check (over a second here), so the fault lands mid-check.
const UNDER_WAY_MS = 150;
const WARM_UP_TRIES = 5;

function settle(p: Promise<Verdict>, hangMs: number): Promise<Settled> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<Settled>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'hang' }), hangMs);
  });
  const answer = p.then(
    ({ decision, reason, error }): Settled => ({ kind: 'verdict', verdict: { decision, reason, ...(error ? { error: { name: error.name, code: error.code } } : {}) } }),
    (e: unknown): Settled => ({
      kind: 'rejected',
      name: e instanceof Error ? e.name : typeof e,
      code: (e as { code?: unknown } | null)?.code === undefined ? `untyped: ${String(e)}` : String((e as { code: unknown }).code),
      typed: e instanceof EdgeArmorError,
    }),
  );
  return Promise.race([answer, hang]).finally(() => clearTimeout(timer));
}

interface Chain {
  guard: WorkerGuard;
  hangMs: number;
  /** Every Worker the guard's factory made, with its name, newest last. */
  workers: Array<{ worker: Worker; name: string }>;
  controller: AbortController;
  calls: Promise<Settled>[];
}

const chains = new Map<string, Chain>();

function chainOf(name: string): Chain {
  const chain = chains.get(name);
  if (!chain) throw new Error(`no chain "${name}": call start() first`);
  return chain;
}

const api: FaultMatrixPage = {
  async start(name, modelUrl, options) {
    const workers: Chain['workers'] = [];
    const guard = createGuard({
      ...options,
      modelUrl,
      backend: 'wasm',
      wasmPaths: ortWasmPaths(),
      wasmThreads: 1,
      // A factory, so the page holds each Worker (to terminate it) and the guard can restart after a crash.
      worker: () => {
        const workerName = `${name}#${workers.length + 1}`;
        const worker = new Worker(new URL('../../src/worker.ts', import.meta.url), { type: 'module', name: workerName });
        workers.push({ worker, name: workerName });
        return worker;
      },
    });
    chains.set(name, { guard, hangMs: options.timeoutMs + HANG_MARGIN_MS, workers, controller: new AbortController(), calls: [] });
    return guard.ready;
  },

  async warmUp(name) {
    const { guard, hangMs } = chainOf(name);
    let last: Settled = { kind: 'hang' };
    for (let i = 0; i < WARM_UP_TRIES; i++) {
      last = await settle(guard.check(SMALL), hangMs);
      if (last.kind === 'verdict' && last.verdict.reason === 'model') break;
    }
    return last;
  },

  async launch(name, others) {
    const chain = chainOf(name);
    chain.controller = new AbortController();
    const { guard, hangMs } = chain;
    chain.calls = [settle(guard.check(SLOW, { signal: chain.controller.signal }), hangMs), ...Array.from({ length: others }, () => settle(guard.check(SLOW), hangMs))];
    await new Promise((resolve) => setTimeout(resolve, UNDER_WAY_MS));
    return chain.workers.at(-1)!.name;
  },

  currentWorker(name) {
    return chainOf(name).workers.at(-1)!.name;
  },

  terminateWorker(name) {
    chainOf(name).workers.at(-1)!.worker.terminate();
  },

  abort(name) {
    chainOf(name).controller.abort();
  },

  dispose(name) {
    void chainOf(name).guard.dispose();
  },

  async collect(name, timeoutRetries) {
    const { guard, hangMs, calls } = chainOf(name);
    const all = await Promise.all(calls);
    let next = await settle(guard.check(SMALL), hangMs);
    for (let retry = 0; retry < timeoutRetries && next.kind === 'verdict' && next.verdict.error?.code === 'timeout'; retry++) next = await settle(guard.check(SMALL), hangMs);
    return { all, next };
  },
};

(globalThis as Record<string, unknown>)[FAULT_MATRIX_GLOBAL] = api;
