// The options page: privileged tools and the failure policy, kept in chrome.storage.local; the service
// worker passes them to the guard with every check.
const form = document.getElementById('options');
const privileged = document.getElementById('privileged');
const onError = document.getElementById('on-error');
const saved = document.getElementById('saved');

async function load() {
  const { options = {} } = await chrome.storage.local.get('options');
  privileged.value = (options.privilegedTools ?? []).join(', ');
  onError.value = options.onError ?? 'block';
  document.body.dataset.ready = 'true';
}

form.addEventListener('submit', async (event) => {
  event.preventDefault();
  const privilegedTools = privileged.value.split(',').map((s) => s.trim()).filter(Boolean);
  await chrome.storage.local.set({ options: { privilegedTools, onError: onError.value } });
  saved.textContent = `Saved: ${privilegedTools.length ? privilegedTools.join(', ') : 'every call'} checked; on failure ${onError.value}.`;
});
void load();
