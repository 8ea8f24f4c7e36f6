/**
 * A worker thread for reap-host.ts: a user's own thread running `guards` createNodeGuard({ isolation: 'process' })
 * at once (so the host's termination finds several children loading or replying), each checking the same case over
 * and over, saying before each check that one is being sent, until the host terminates the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { createNodeGuard } from '../../../src/node.js';
import { SMALL } from '../../fault-cases.js';

const port = parentPort!;
const { modelDir, guards } = workerData as { modelDir: string; guards: number };
await Promise.all(
  Array.from({ length: guards }, async () => {
    const guard = createNodeGuard({ modelDir, isolation: 'process', onProgress: (event) => port.postMessage({ type: 'progress', event: event.type }) });
    await guard.ready;
    for (;;) {
      port.postMessage({ type: 'sending' });
      await guard.check(SMALL);
    }
  }),
);
