/**
 * The guard's Web Worker side: importing this module inside a worker exposes the guard service
 * over Comlink (`import 'edgearmor/worker'` is a whole worker file). `createGuard` on the page
 * talks to it. It exports nothing: the worker's protocol is internal (docs/api.md).
 */
import { exposeInWorker } from './wire/endpoint.js';
import { createWorkerService } from './worker/service.js';

exposeInWorker(createWorkerService());
