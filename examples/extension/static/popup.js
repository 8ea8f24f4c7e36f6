// The popup: the current tab's latest verdict and the last checks (decision, why, which span), from the
// service worker's session storage. `?tab=<id>` picks the tab (tests open the popup as a page).

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

function decisionBadge(check) {
  return el('strong', { class: `badge ${check.decision}` }, check.decision === 'block' ? 'Blocked' : 'Allowed');
}

function describe(check, full) {
  const host = (() => {
    try {
      return new URL(check.url).host;
    } catch {
      return check.url;
    }
  })();
  const item = el('div', { class: 'check', 'data-decision': check.decision, 'data-reason': check.reason });
  item.append(el('p', {}, decisionBadge(check), ` ${check.action} on ${host}`));
  item.append(el('p', { class: 'why' }, `Why: ${check.headline}`));
  if (check.spans.length > 0) item.append(el('p', { class: 'spans' }, `Span: ${check.spans.join('; ')}`));
  if (full) item.append(el('p', { class: 'explain muted' }, check.explanation));
  item.append(el('p', { class: 'muted time' }, new Date(check.time).toLocaleTimeString()));
  return item;
}

async function currentTabId() {
  const fromQuery = new URLSearchParams(location.search).get('tab');
  if (fromQuery !== null) return Number(fromQuery);
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab?.id ?? null;
}

async function render() {
  const { checks = [], familiarity } = await chrome.storage.session.get(['checks', 'familiarity']);
  const tabId = await currentTabId();
  const mine = checks.find((c) => c.tabId === tabId);
  if (mine) document.getElementById('current').replaceChildren(describe(mine, true));
  document.getElementById('checks').replaceChildren(...checks.map((c) => el('li', {}, describe(c, false))));
  document.getElementById('no-checks').hidden = checks.length > 0;
  // Whether the proxy knows this agent: on agents it does not know, its verdicts are near chance.
  if (typeof familiarity === 'string') document.getElementById('familiarity').textContent = familiarity;
  document.body.dataset.ready = 'true';
}

chrome.storage.onChanged.addListener((changes, area) => {
  if (area === 'session' && ('checks' in changes || 'familiarity' in changes)) void render();
});
void render();
