/**
 * The child of the process scorer (process-scorer.ts), as a child process (onnxruntime-node) or, where
 * no process can start, a worker thread (wasm): loads the model (verifying its files here, not in the
 * host) and scores what the host sends, one AbortController a call so a cancel stops that call's model
 * work. It exits when the host disconnects or says dispose.
 */
import { parentPort } from 'node:worker_threads';
import { serializeError } from '../core/errors.js';
import type { Scorer } from '../core/scorer-port.js';
import { nodeModelReader } from './files-node.js';
import { loadEngineScorer } from './local-guard.js';
import type { ChildReply, ChildRequest } from './process-scorer.js';

let scorer: Scorer | null = null;
const calls = new Map<number, AbortController>();

function reply(message: ChildReply): void {
  if (parentPort) parentPort.postMessage(message);
  // A host that went away while this child replied (its thread terminated, its process killed) leaves the channel
  // closed: that ends the child, as the disconnect does, instead of an uncaught `write EPIPE` on the host's stderr.
  else process.send?.(message, undefined, undefined, (error: Error | null) => error && process.exit(0));
}

async function load(request: Extract<ChildRequest, { type: 'load' }>): Promise<void> {
  try {
    const loaded = await loadEngineScorer({
      ...request.runtime,
      reader: nodeModelReader(request.location),
      backends: request.backends,
      onProgress: (event) => reply({ type: 'progress', event }),
    });
    scorer = loaded.scorer;
    const { backend, model, variant, maxContextTokens, maxTextChars, scoring, attention, attentionUnavailable, chatFormat, shape, logitsUnavailable, rendering } = scorer.info;
    const info = {
      backend,
      model,
      variant,
      maxContextTokens,
      maxTextChars,
      scoring,
      attention,
      attentionUnavailable,
      chatFormat,
      logitsUnavailable: logitsUnavailable ?? null,
      ...(shape ? { shape } : {}),
      ...(rendering !== undefined ? { rendering } : {}),
    };
    reply({ type: 'loaded', info, modelOptions: loaded.modelOptions, fallbackReason: loaded.fallbackReason ?? null });
  } catch (error) {
    reply({ type: 'load-failed', error: serializeError(error) });
  }
}

async function score(request: Extract<ChildRequest, { type: 'score' }>): Promise<void> {
  const controller = new AbortController();
  calls.set(request.id, controller);
  try {
    if (scorer === null) throw new Error('the scoring process got a call before its model loaded');
    const scores = await scorer.score({ ...request.request, signal: controller.signal });
    reply({ type: 'scored', id: request.id, scores });
  } catch (error) {
    reply({ type: 'failed', id: request.id, error: serializeError(error) });
  } finally {
    calls.delete(request.id);
  }
}

function onRequest(message: ChildRequest): void {
  switch (message.type) {
    case 'load':
      void load(message);
      break;
    case 'score':
      void score(message);
      break;
    case 'cancel':
      calls.get(message.id)?.abort();
      break;
    case 'dispose':
      // In a worker thread, process.exit ends the thread only.
      void (scorer?.dispose() ?? Promise.resolve()).finally(() => process.exit(0));
      break;
  }
}

if (parentPort) parentPort.on('message', onRequest);
else {
  process.on('message', onRequest);
  // The host is gone (it exited, or closed the channel): nothing is left to score for.
  process.on('disconnect', () => process.exit(0));
}
