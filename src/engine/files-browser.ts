/**
 * Browser model file access: fetch from one base URL with streaming progress, kept in Cache
 * Storage so a reload reads from the cache instead of the network.
 *
 * Integrity is checked by model-files.ts on whatever this returns; a cached file that fails the
 * check must be evicted (see {@link BrowserFileReader.evict}) so the next load fetches it again.
 */
import { IntegrityError, ModelLoadError } from '../core/errors.js';
import type { FileReader, StreamCheck } from './model-files.js';

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

/** A FileReader over HTTP with a Cache Storage layer; external data is streamed through its check into a Blob. */
export interface BrowserFileReader extends FileReader {
  streamed(relativePath: string, check: StreamCheck): Promise<Blob>;
  /** Removes one file from the cache (after it failed its integrity check). */
  evict(relativePath: string): Promise<void>;
  /** Whether the last read of this file came from the cache. */
  readFromCache(relativePath: string): boolean;
}

// Always asked of the network first: a fresh manifest decides which cached bytes are still valid.
const NETWORK_FIRST = new Set(['manifest.json']);
// One progress event per MiB keeps a 100 MB download to ~100 messages across the worker boundary.
const PROGRESS_STEP_BYTES = 1 << 20;
// Streamed chunks are folded into a Blob every 64 MiB: the browser may then keep them outside the JS heap
// (Chromium moves large blob data to disk), so a multi-GB file never sits in JS memory as chunks.
const BLOB_PART_BYTES = 64 << 20;

/** A response's Content-Length, when it gives one. */
function totalOf(response: Response): number | null {
  const length = Number(response.headers.get('content-length'));
  return Number.isFinite(length) && length > 0 ? length : null;
}

function resolveUnder(baseUrl: string, path: string): string {
  const base = new URL(baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`, globalThis.location?.href);
  const url = new URL(path, base);
  if (url.origin !== base.origin || !url.pathname.startsWith(base.pathname)) {
    throw new ModelLoadError(`model file "${path}" resolves to ${url.href}, outside the model URL ${base.href}; refusing to fetch it`, { file: path });
  }
  return url.href;
}

/** Feeds a body's chunks to `take` as they arrive, reporting progress each MiB and at the end; a throw from `take` cancels the body. */
async function eachChunk(response: Response, take: (chunk: Uint8Array) => void, report: (loaded: number) => void): Promise<number> {
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    take(bytes);
    report(bytes.byteLength);
    return bytes.byteLength;
  }
  const reader = response.body.getReader();
  let loaded = 0;
  let nextReport = PROGRESS_STEP_BYTES;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      take(value);
      loaded += value.byteLength;
      if (loaded >= nextReport) {
        report(loaded);
        nextReport = loaded + PROGRESS_STEP_BYTES;
      }
    }
  } catch (e) {
    await reader.cancel().catch(() => undefined);
    throw e;
  }
  report(loaded);
  return loaded;
}

async function readBody(response: Response, report: (loaded: number) => void): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  const loaded = await eachChunk(response, (chunk) => chunks.push(chunk), report);
  const out = new Uint8Array(loaded);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.byteLength;
  }
  return out;
}

/** A body checked chunk by chunk as it streams and gathered into a Blob (in parts, never one buffer); throws what the check throws. */
async function checkedBlob(response: Response, check: StreamCheck, report: (loaded: number) => void): Promise<Blob> {
  const parts: Blob[] = [];
  let pending: Uint8Array[] = [];
  let pendingBytes = 0;
  await eachChunk(
    response,
    (chunk) => {
      check.update(chunk);
      pending.push(chunk);
      pendingBytes += chunk.byteLength;
      if (pendingBytes >= BLOB_PART_BYTES) {
        parts.push(new Blob(pending as Uint8Array<ArrayBuffer>[]));
        pending = [];
        pendingBytes = 0;
      }
    },
    report,
  );
  check.end();
  return new Blob([...parts, new Blob(pending as Uint8Array<ArrayBuffer>[])]);
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
    const response = await fetchOk(path, url);
    return readBody(response, (loaded) => emit(path, loaded, totalOf(response), false));
  };

  const fetchOk = async (path: string, url: string): Promise<Response> => {
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
    return response;
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

  /**
   * External data: streamed through the manifest check into a Blob, from Cache Storage when it has the file
   * (a copy there that fails the check is evicted and fetched again), else from the network. Only bytes
   * that passed the check are stored in the cache or returned.
   */
  const streamed = async (path: string, check: StreamCheck): Promise<Blob> => {
    const url = resolveUnder(options.baseUrl, path);
    const cache = await openCache();
    const hit = cache ? await cache.match(url).catch(() => undefined) : undefined;
    if (hit) {
      try {
        const blob = await checkedBlob(hit, check, (loaded) => emit(path, loaded, totalOf(hit), true));
        fromCache.set(path, true);
        return blob;
      } catch (e) {
        if (!(e instanceof IntegrityError)) throw e;
        await cache?.delete(url).catch(() => false);
        return streamed(path, check.fresh());
      }
    }
    const response = await fetchOk(path, url);
    const blob = await checkedBlob(response, check, (loaded) => emit(path, loaded, totalOf(response), false));
    fromCache.set(path, false);
    await cache?.put(url, new Response(blob, { headers: { 'content-length': String(blob.size) } })).catch(() => undefined);
    return blob;
  };

  return Object.assign(read, {
    streamed,
    async evict(path: string): Promise<void> {
      const cache = await openCache();
      await cache?.delete(resolveUnder(options.baseUrl, path)).catch(() => false);
    },
    readFromCache: (path: string) => fromCache.get(path) ?? false,
  });
}
