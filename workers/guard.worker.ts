/** The guard worker entry: exposes the guard service over Comlink (browser Worker or Node worker_threads). */
import '../src/worker.js';
