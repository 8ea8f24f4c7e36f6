/**
 * The guard's Web Worker side: importing this module inside a worker serves the worker's scorer host
 * (`import 'edgearmor/worker'` is a whole worker file). `createGuard` on the page runs the conductor and
 * sends it only load, score, cancel, ping and dispose. It exports nothing: the protocol is internal (docs/api.md).
 */
import { serveInWorker } from './wire/endpoint.js';
import type { WorkerLoad } from './wire/protocol.js';
import { createWorkerScorerHost } from './worker/service.js';

serveInWorker<WorkerLoad>((post) => createWorkerScorerHost(post));
