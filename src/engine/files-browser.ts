/**
 * Browser model file access: fetch from one base URL with streaming progress, kept in Cache
 * Storage so a reload reads from the cache instead of the network.
 *
 * Integrity is checked by model-files.ts on whatever this returns; a cached file that fails the
 * check must be evicted (see {@link BrowserFileReader.evict}) so the next load fetches it again.
 */
import { ModelLoadError } from '../core/errors.js';
import type { FileReader } from './model-files.js';

/** The Cache Storage bucket holding model files. */
export const MODEL_CACHE_NAME = 'edgearmor-models-v1';

/** A file download progress event (the `file` member of GuardProgress). */
export interface FileProgressEvent {
  type: 'file';
  file: string;
  loadedBytes: number;
  totalBytes: number | null;
  fromCache: boolean;
}

/** Options of {@link createBrowserReader}. */
export interface BrowserReaderOptions {
  /** The model directory's URL; every file is fetched below it and nowhere else. */
  baseUrl: string;
  onProgress?: (event: FileProgressEvent) => void;
  /** @defaultValue MODEL_CACHE_NAME */
  cacheName?: string;
  /** @defaultValue globalThis.fetch */
  fetch?: typeof fetch;
  /** null disables caching. @defaultValue globalThis.caches when it exists */
  caches?: CacheStorage | null;
}

/** A FileReader over HTTP with a Cache Storage layer. */
export interface BrowserFileReader extends FileReader {
  /** Removes one file from the cache (after it failed its integrity check). */
  evict(relativePath: string): Promise<void>;
  /** Whether the last read of this file came from the cache. */
  readFromCache(relativePath: string): boolean;
}

// Always asked of the network first: a fresh manifest decides which cached bytes are still valid.
const NETWORK_FIRST = new Set(['manifest.json']);
// One progress event per MiB keeps a 100 MB download to ~100 messages across the worker boundary.
const PROGRESS_STEP_BYTES = 1 << 20;

function resolveUnder(baseUrl: string, path: string): string {
  const base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`, globalThis.location?.href);
  const url = new URL(path, base);
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) {
    throw new ModelLoadError(`model file "${path}" resolves to ${url.href}, outside the model URL ${base.href}; refusing to fetch it`, { file: path });
  }
  return url.href;
}

async function readBody(response: Response, report: (loaded: number) => void): Promise<Uint8Array> {
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    report(bytes.byteLength);
    return bytes;
  }
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let loaded = 0;
  let nextReport = PROGRESS_STEP_BYTES;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    loaded += value.byteLength;
    if (loaded >= nextReport) {
      report(loaded);
      nextReport = loaded + PROGRESS_STEP_BYTES;
    }
  }
  report(loaded);
  const out = new Uint8Array(loaded);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/** Creates a FileReader that fetches `<baseUrl>/<path>` and caches each file in Cache Storage. */
export function createBrowserReader(options: BrowserReaderOptions): BrowserFileReader {
  const doFetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  const storage = options.caches === undefined ? (globalThis.caches ?? null) : options.caches;
  const cacheName = options.cacheName ?? MODEL_CACHE_NAME;
  const fromCache = new Map<string, boolean>();
  let cachePromise: Promise<Cache | null> | undefined;
  const openCache = (): Promise<Cache | null> => {
    // Cache Storage throws in some contexts (opaque origins, private modes): fall back to plain fetch.
    cachePromise ??= storage ? storage.open(cacheName).catch(() => null) : Promise.resolve(null);
    return cachePromise;
  };

  const emit = (file: string, loadedBytes: number, totalBytes: number | null, cached: boolean) =>
    options.onProgress?.({ type: 'file', file, loadedBytes, totalBytes, fromCache: cached });

  const fetchNetwork = async (path: string, url: string): Promise<Uint8Array> => {
    let response: Response;
    try {
      response = await doFetch(url, { cache: 'no-store' });
    } catch (e) {
      throw new ModelLoadError(`cannot fetch model file "${path}" from ${url}: ${(e as Error).message}`, { file: path, url });
    }
    if (!response.ok) {
      throw new ModelLoadError(`cannot fetch model file "${path}" from ${url}: HTTP ${response.status} ${response.statusText}`, {
        file: path,
        url,
        status: response.status,
      });
    }
    const length = Number(response.headers.get('content-length'));
    const total = Number.isFinite(length) && length > 0 ? length : null;
    return readBody(response, (loaded) => emit(path, loaded, total, false));
  };

  const readCached = async (cache: Cache | null, path: string, url: string): Promise<Uint8Array | null> => {
    const hit = cache ? await cache.match(url).catch(() => undefined) : undefined;
    if (!hit) return null;
    const bytes = new Uint8Array(await hit.arrayBuffer());
    emit(path, bytes.byteLength, bytes.byteLength, true);
    return bytes;
  };

  const store = async (cache: Cache | null, url: string, bytes: Uint8Array): Promise<void> => {
    // A full or unavailable cache only costs a re-download next time.
    await cache?.put(url, new Response(bytes as Uint8Array<ArrayBuffer>, { headers: { 'content-length': String(bytes.byteLength) } })).catch(() => undefined);
  };

  const read = async (path: string): Promise<Uint8Array> => {
    const url = resolveUnder(options.baseUrl, path);
    const cache = await openCache();
    if (NETWORK_FIRST.has(path)) {
      try {
        const bytes = await fetchNetwork(path, url);
        fromCache.set(path, false);
        await store(cache, url, bytes);
        return bytes;
      } catch (e) {
        const cached = await readCached(cache, path, url);
        if (!cached) throw e;
        fromCache.set(path, true);
        return cached;
      }
    }
    const cached = await readCached(cache, path, url);
    if (cached) {
      fromCache.set(path, true);
      return cached;
    }
    const bytes = await fetchNetwork(path, url);
    fromCache.set(path, false);
    await store(cache, url, bytes);
    return bytes;
  };

  return Object.assign(read, {
    async evict(path: string): Promise<void> {
      const cache = await openCache();
      await cache?.delete(resolveUnder(options.baseUrl, path)).catch(() => false);
    },
    readFromCache: (path: string) => fromCache.get(path) ?? false,
  });
}
