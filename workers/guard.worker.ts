/** The guard worker: exposes the guard service over Comlink (browser Worker or Node worker_threads). */
import { exposeInWorker } from '../src/client/endpoint.js';
import { createWorkerService } from '../src/client/worker-service.js';

exposeInWorker(createWorkerService());
