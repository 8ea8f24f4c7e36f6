/**
 * A worker thread for reap-host.ts: a user's own thread running createNodeGuard({ isolation: 'process' }),
 * checking the same case over and over and saying before each check that one is being sent, until the
 * host terminates it.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createNodeGuard } from '../../../src/node.js';
import { SMALL } from '../../fault-cases.js';

const port = parentPort!;
const guard = createNodeGuard({
  modelDir: (workerData as { modelDir: string }).modelDir,
  isolation: 'process',
  onProgress: (event) => port.postMessage({ type: 'progress', event: event.type }),
});
await guard.ready;
for (;;) {
  port.postMessage({ type: 'sending' });
  await guard.check(SMALL);
}
