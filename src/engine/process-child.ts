/**
 * The child of the process scorer (process-scorer.ts), as a child process (onnxruntime-node) or, where
 * no process can start, a worker thread (wasm): the scorer host (wire/scorer-host.ts) over the model it
 * loads here (verifying its files here, not in the host). It exits when the host disconnects or says dispose.
 */
import { parentPort } from 'node:worker_threads';
import { transferables, type ScorerCall, type ScorerReply } from '../wire/protocol.js';
import { createScorerHost } from '../wire/scorer-host.js';
import { nodeModelReader } from './files-node.js';
import { loadEngineScorer } from './local-guard.js';
import type { ProcessLoad } from './process-scorer.js';

function post(reply: ScorerReply): void {
  if (parentPort) parentPort.postMessage(reply, transferables(reply));
  // A host that went away while this child replied (its thread terminated, its process killed) leaves the channel
  // closed: that ends the child, as the disconnect does, instead of an uncaught `write EPIPE` on the host's stderr.
  else process.send?.(reply, undefined, undefined, (error: Error | null) => error && process.exit(0));
}

const host = createScorerHost<ProcessLoad>({
  load: (load, onProgress) => loadEngineScorer({ ...load.runtime, reader: nodeModelReader(load.location), backends: load.backends, onProgress }),
  post,
  // In a worker thread, process.exit ends the thread only.
  exit: () => process.exit(0),
});

if (parentPort) parentPort.on('message', (call: ScorerCall<ProcessLoad>) => host(call));
else {
  process.on('message', (call: ScorerCall<ProcessLoad>) => host(call));
  // The host is gone (it exited, or closed the channel): nothing is left to score for.
  process.on('disconnect', () => process.exit(0));
}
