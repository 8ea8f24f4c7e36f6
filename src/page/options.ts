/**
 * createGuard's own options (besides the guard's and the runtime's), declared once with the others
 * (core/shell-options.ts shares the backend, model location and progress declarations with Node's).
 */
import { group, option, type OptionsInput } from '../core/option-schema.js';
import { BACKEND_OPTION, milliseconds, MODEL_DIR_OPTION, MODEL_URL_OPTION, ON_PROGRESS_OPTION, STUCK_GRACE_OPTION, workerSource } from '../core/shell-options.js';
import type { WorkerLike } from '../wire/endpoint.js';

/** The options createGuard keeps on the page side. */
export const CLIENT_OPTIONS = group(
  {
    worker: option(
      workerSource<WorkerLike | (() => WorkerLike)>('a Worker, or a function that makes one'),
      null,
      { summary: 'the worker, or a factory for one; only a factory lets the guard restart after a crash', defaultText: "a module Worker running the package's dist/worker.js (browsers)" },
    ),
    modelUrl: MODEL_URL_OPTION,
    modelDir: MODEL_DIR_OPTION,
    backend: BACKEND_OPTION,
    onProgress: ON_PROGRESS_OPTION,
    stuckWorkerGraceMs: STUCK_GRACE_OPTION,
    heartbeatTimeoutMs: option(
      milliseconds('a finite number of milliseconds > 0, or null to turn the heartbeat off', (n) => n > 0, true),
      null,
      {
        summary: 'a worker that leaves a ping unanswered this long is treated as crashed; keep it above the longest inference run; null: off',
        defaultText: '15000 for browser Workers; off for Node worker_threads (they report their exit)',
      },
    ),
  },
  "createGuard's own options",
);

/** createGuard's own options as callers give them. */
export type ClientShellOptions = OptionsInput<typeof CLIENT_OPTIONS>;
