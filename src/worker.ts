/**
 * The guard's Web Worker side: importing this module inside a worker exposes the guard service
 * over Comlink (`import 'edgearmor/worker'` is a whole worker file). `createGuard` on the page
 * talks to it.
 */
import { exposeInWorker } from './client/endpoint.js';
import { createWorkerService } from './client/worker-service.js';

export { createWorkerService } from './client/worker-service.js';
export type { GuardWorkerApi, WorkerInitOptions } from './client/protocol.js';

exposeInWorker(createWorkerService());
