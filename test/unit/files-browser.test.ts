import { describe, expect, it } from 'vitest';
import { createBrowserReader, type FileProgressEvent } from '../../src/engine/files-browser.js';

/** A Map-backed stand-in for Cache Storage (only what the reader uses). */
function fakeCaches(): CacheStorage {
  const store = new Map<string, Uint8Array>();
  const cache = {
    match: async (url: string) => (store.has(url) ? new Response(store.get(url)! as Uint8Array<ArrayBuffer>) : undefined),
    put: async (url: string, response: Response) => void store.set(url, new Uint8Array(await response.arrayBuffer())),
    delete: async (url: string) => store.delete(url),
  };
  return { open: async () => cache } as unknown as CacheStorage;
}

function fakeFetch(files: Record<string, string>, log: string[]): typeof fetch {
  return (async (url: string) => {
    log.push(url);
    const body = files[new URL(url).pathname];
    return body === undefined ? new Response('missing', { status: 404, statusText: 'Not Found' }) : new Response(body, { headers: { 'content-length': String(body.length) } });
  }) as unknown as typeof fetch;
}

const BASE = 'http://127.0.0.1:5173/models/tiny/';

describe('browser model file reader', () => {
  it('fetches once, then serves the file from Cache Storage with fromCache progress', async () => {
    const log: string[] = [];
    const events: FileProgressEvent[] = [];
    const options = { baseUrl: BASE, fetch: fakeFetch({ '/models/tiny/config.json': '{"a":1}' }, log), caches: fakeCaches(), onProgress: (e: FileProgressEvent) => events.push(e) };
    const reader = createBrowserReader(options);
    expect(new TextDecoder().decode(await reader('config.json'))).toBe('{"a":1}');
    expect(new TextDecoder().decode(await reader('config.json'))).toBe('{"a":1}');
    expect(log).toEqual([`${BASE}config.json`]);
    expect(events.map((e) => e.fromCache)).toEqual([false, true]);
    expect(events[0]).toMatchObject({ file: 'config.json', loadedBytes: 7, totalBytes: 7 });
  });

  it('fetches an evicted file again', async () => {
    const log: string[] = [];
    const reader = createBrowserReader({ baseUrl: BASE, fetch: fakeFetch({ '/models/tiny/config.json': '{}' }, log), caches: fakeCaches() });
    await reader('config.json');
    expect(reader.readFromCache('config.json')).toBe(false);
    await reader.evict('config.json');
    await reader('config.json');
    expect(log).toHaveLength(2);
  });

  it('works without Cache Storage and reports HTTP failures as ModelLoadError', async () => {
    const reader = createBrowserReader({ baseUrl: BASE, fetch: fakeFetch({}, []), caches: null });
    await expect(reader('config.json')).rejects.toMatchObject({ code: 'model-load-failed' });
  });

  it('refuses a path that resolves outside the model URL', async () => {
    const log: string[] = [];
    const reader = createBrowserReader({ baseUrl: BASE, fetch: fakeFetch({}, log), caches: null });
    await expect(reader('../../secret.json')).rejects.toMatchObject({ code: 'model-load-failed' });
    await expect(reader('https://evil.example/x')).rejects.toMatchObject({ code: 'model-load-failed' });
    expect(log).toEqual([]);
  });
});
