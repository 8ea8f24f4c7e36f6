// Content script: hands the page's visible text to the extension, as an agent's "read_page" tool result.
chrome.runtime.onMessage.addListener((message, _sender, sendResponse) => {
  if (message?.type !== 'edgearmor:collect') return false;
  // innerText is what is rendered: hidden elements and script/style contents are left out.
  sendResponse({ url: location.href, title: document.title, text: document.body?.innerText ?? '' });
  return false;
});
