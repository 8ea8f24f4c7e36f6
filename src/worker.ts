/**
 * The guard's Web Worker side: importing this module inside a worker exposes the guard service
 * over Comlink (`import 'edgearmor/worker'` is a whole worker file). `createGuard` on the page
 * talks to it.
 */
import { exposeInWorker } from './wire/endpoint.js';
import { createWorkerService } from './worker/service.js';

export { createWorkerService } from './worker/service.js';
export type { GuardWorkerApi, WorkerInitOptions } from './wire/protocol.js';

exposeInWorker(createWorkerService());
