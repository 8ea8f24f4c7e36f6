/**
 * The offscreen document: hosts the guard (its model runs in a Web Worker started from here) and
 * answers the service worker's `check` and `status` messages. Everything comes from the
 * extension's own files: the model under models/edgearmor-proxy/, onnxruntime-web under ort/.
 * Guard options (privileged tools, failure policy) come with each message from the options page's
 * storage; the guard is recreated when they change.
 */
import { createGuard, type WorkerGuard } from '../../src/page/create-guard.js';
import { serializeError } from '../../src/core/errors.js';
import { explainVerdict, verdictFindings, verdictHeadline } from '../../src/core/explain.js';
import { familiarityLine } from '../../src/core/familiarity.js';
import type { GuardOptions } from '../../src/core/options.js';
import type { GuardInput } from '../../src/core/types.js';
import type { Verdict } from '../../src/core/verdict.js';

let current: { key: string; guard: WorkerGuard } | null = null;

function guardFor(options: GuardOptions): WorkerGuard {
  const key = JSON.stringify(options);
  if (current?.key === key) return current.guard;
  void current?.guard.dispose();
  const guard = createGuard({
    ...options,
    modelUrl: chrome.runtime.getURL('models/edgearmor-proxy/'),
    wasmPaths: chrome.runtime.getURL('ort/'),
    // Offscreen documents are not cross-origin isolated: no SharedArrayBuffer, so one wasm thread.
    wasmThreads: 1,
  });
  current = { key, guard };
  return guard;
}

/** The popup's words for a verdict: the same as `edgearmor check --explain`, with the tool-definition findings the input carried listed after the model's. */
function summary(input: GuardInput, v: Verdict) {
  const findings = v.reason === 'model' ? verdictFindings(v) : [];
  const definitions = (v.toolDefinitions ?? []).map((f) => `tool definition, ${f.kind}: ${f.text}`);
  return { headline: verdictHeadline(v, findings), findings: [...findings.map((f) => f.label), ...definitions], explanation: explainVerdict(input, v) };
}

type Request = { target?: string; type?: string; input?: unknown; options?: GuardOptions };

chrome.runtime.onMessage.addListener((message: Request, _sender, sendResponse) => {
  if (message?.target !== 'edgearmor-offscreen') return false;
  const guard = guardFor(message.options ?? {});
  const work =
    message.type === 'check'
      ? guard.ready
          .then(() => guard.check(message.input))
          // With each verdict, whether the proxy knows this agent (counted over this guard's checks); a status
          // that fails (a worker lost after the check) costs that line, never the verdict.
          .then(async (verdict) => ({
            verdict,
            summary: summary(message.input as GuardInput, verdict),
            familiarity: await guard.status().then((s) => familiarityLine(s.familiarity), () => null),
          }))
      : guard.ready;
  work.then(
    (value) => sendResponse({ ok: true, value }),
    (error: unknown) => sendResponse({ ok: false, error: serializeError(error) }),
  );
  // Answer asynchronously.
  return true;
});
