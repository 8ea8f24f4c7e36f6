/**
 * The offscreen document: hosts the guard (its model runs in a Web Worker started from here) and
 * answers the service worker's `check` and `status` messages. Everything comes from the
 * extension's own files: the model under models/edgearmor-proxy/, onnxruntime-web under ort/.
 */
import { createGuard } from '../../src/client/create-guard.js';
import { serializeError } from '../../src/core/errors.js';

const guard = createGuard({
  modelUrl: chrome.runtime.getURL('models/edgearmor-proxy/'),
  wasmPaths: chrome.runtime.getURL('ort/'),
  // Offscreen documents are not cross-origin isolated: no SharedArrayBuffer, so one wasm thread.
  wasmThreads: 1,
});

type Request = { target?: string; type?: string; input?: unknown };

chrome.runtime.onMessage.addListener((message: Request, _sender, sendResponse) => {
  if (message?.target !== 'edgearmor-offscreen') return false;
  const work = message.type === 'check' ? guard.ready.then(() => guard.check(message.input)) : guard.ready;
  work.then(
    (value) => sendResponse({ ok: true, value }),
    (error: unknown) => sendResponse({ ok: false, error: serializeError(error) }),
  );
  // Answer asynchronously.
  return true;
});
