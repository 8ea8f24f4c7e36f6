// Service worker: MV3 service workers cannot host the guard (no dynamic import, no Worker), so the
// guard lives in an offscreen document; this relays a tab's text and the agent's proposed call to it.
const OFFSCREEN_URL = 'offscreen.html';

async function ensureOffscreen() {
  const contexts = await chrome.runtime.getContexts({ contextTypes: ['OFFSCREEN_DOCUMENT'] });
  if (contexts.length > 0) return;
  await chrome.offscreen.createDocument({ url: OFFSCREEN_URL, reasons: ['WORKERS'], justification: 'Runs the EdgeArmor guard model in a Web Worker.' });
}

/** The guard input for an agent that read a page (a tool result) and proposes `action`. */
function pageConversation(page, userRequest, action) {
  return {
    messages: [
      { role: 'user', content: userRequest },
      { role: 'assistant', content: '', tool_calls: [{ name: 'read_page', arguments: { url: page.url } }] },
      { role: 'tool', tool_name: 'read_page', content: page.text },
    ],
    action,
  };
}

/** Asks the tab's content script for its text, waiting for the script to arrive in a page still loading. */
async function collect(tabId) {
  for (let attempt = 0; ; attempt++) {
    try {
      return await chrome.tabs.sendMessage(tabId, { type: 'edgearmor:collect' });
    } catch (error) {
      if (attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

const MAX_CHECKS = 20;

/** The options page's settings as guard options (privileged tools, failure policy). */
async function guardOptions() {
  const { options } = await chrome.storage.local.get('options');
  const out = {};
  if (Array.isArray(options?.privilegedTools) && options.privilegedTools.length > 0) out.privilegedTools = options.privilegedTools;
  if (options?.onError === 'block' || options?.onError === 'allow') out.onError = options.onError;
  return out;
}

/** Keeps the last checks (newest first) for the popup, in session storage: gone when the browser closes. */
async function remember(tabId, url, action, verdict, summary) {
  const { checks = [] } = await chrome.storage.session.get('checks');
  const entry = {
    tabId,
    url,
    time: Date.now(),
    action: action.name,
    decision: verdict.decision,
    reason: verdict.reason,
    headline: summary.headline,
    findings: summary.findings,
    explanation: summary.explanation,
    spans: verdict.flagged.map((f) => `${f.toolName ?? 'tool'} result, messages[${f.messageIndex}]`),
  };
  await chrome.storage.session.set({ checks: [entry, ...checks].slice(0, MAX_CHECKS) });
}

/** Collects the tab's visible text and checks the proposed call with the guard; sets the badge; returns the verdict. */
async function checkTab(tabId, { userRequest, action }) {
  const page = await collect(tabId);
  await ensureOffscreen();
  const options = await guardOptions();
  const answer = await chrome.runtime.sendMessage({ target: 'edgearmor-offscreen', type: 'check', input: pageConversation(page, userRequest, action), options });
  if (!answer?.ok) throw new Error(answer?.error?.message ?? 'the offscreen guard did not answer');
  const { verdict, summary, familiarity } = answer.value;
  await chrome.action.setBadgeText({ tabId, text: verdict.decision === 'block' ? 'BLK' : 'OK' });
  await chrome.action.setBadgeBackgroundColor({ tabId, color: verdict.decision === 'block' ? '#D55E00' : '#009E73' });
  await remember(tabId, page.url, action, verdict, summary);
  // Whether the proxy knows the agent, over the guard's checks so far (the popup shows it).
  if (typeof familiarity === 'string') await chrome.storage.session.set({ familiarity });
  return verdict;
}

/** The guard's status (backend, model), loading it if needed. */
async function guardStatus() {
  await ensureOffscreen();
  const answer = await chrome.runtime.sendMessage({ target: 'edgearmor-offscreen', type: 'status', options: await guardOptions() });
  if (!answer?.ok) throw new Error(answer?.error?.message ?? 'the offscreen guard did not answer');
  return answer.value;
}

// For the agent code living in this extension (and for tests): globalThis.edgearmor.checkTab(...).
globalThis.edgearmor = { checkTab, guardStatus };
