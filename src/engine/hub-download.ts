/**
 * Requests to a Hugging Face Hub (or any server with its URL layout) from Node: the hub's error codes
 * turned into one-line typed errors, and downloads of one file that resume where an earlier attempt
 * stopped (HTTP Range), hashing as they write so no file is read twice.
 */
import { open, rm, stat, type FileHandle } from 'node:fs/promises';
import { setTimeout as delay } from 'node:timers/promises';
import { IntegrityError, ModelLoadError, type EdgeArmorError } from '../core/errors.js';
import { createDigester, streamFile, type FileDigest } from './files-node.js';

/** How requests reach the hub: its base URL, the fetch to use, the headers every request carries (the token). */
export interface HubClient {
  endpoint: string;
  fetch: typeof fetch;
  headers: Record<string, string>;
  signal?: AbortSignal | undefined;
}

/** Why a request failed, as the hub says it: the status and its `X-Error-Code` (RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo). */
export interface HubFailure {
  status: number;
  code: string | null;
  message: string | null;
}

/** Maps a failed request to the error to throw (null: the generic one). */
export type HubFailureMessage = (failure: HubFailure) => EdgeArmorError | null;

/** Whether an error is the caller's abort, which is passed on as it is. */
function aborted(client: HubClient, e: unknown): boolean {
  return client.signal?.aborted === true || (e as Error)?.name === 'AbortError';
}

/** The network-level reason fetch gives: the system's code (ECONNREFUSED, ENOTFOUND...), else its message ("other side closed"). */
function networkCause(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return (/^E[A-Z]+$/.test(cause?.code ?? '') ? cause?.code : undefined) ?? cause?.message ?? (e as Error).message;
}

/** GETs a hub URL; throws a one-line ModelLoadError for a network failure or an HTTP error (`explain` names the hub's own causes). */
export async function hubGet(client: HubClient, url: string, what: string, explain: HubFailureMessage, headers: Record<string, string> = {}): Promise<Response> {
  let response: Response;
  try {
    response = await client.fetch(url, { headers: { ...client.headers, ...headers }, redirect: 'follow', ...(client.signal ? { signal: client.signal } : {}) });
  } catch (e) {
    if (aborted(client, e)) throw e;
    throw new ModelLoadError(`cannot reach the hub at ${client.endpoint} (${networkCause(e)}) while fetching ${what}; check HF_ENDPOINT and the network`, { endpoint: client.endpoint, url, network: true }, { cause: e });
  }
  if (response.ok || response.status === 416) return response;
  await response.body?.cancel().catch(() => undefined);
  const failure: HubFailure = { status: response.status, code: response.headers.get('x-error-code'), message: response.headers.get('x-error-message') };
  throw (
    explain(failure) ??
    new ModelLoadError(`cannot fetch ${what} from ${url}: HTTP ${response.status}${failure.message ? ` (${failure.message})` : ''}`, { url, status: response.status })
  );
}

/** One file to download and where it goes. */
export interface DownloadTarget {
  /** The file's path in the repository, for messages. */
  name: string;
  url: string;
  /** Where the bytes go; what is already there is taken as the file's beginning. */
  file: string;
  /** The size the hub lists. */
  size: number;
  /** Also compute git's blob SHA-1 (files the hub does not keep in LFS are recorded by it). */
  gitBlob: boolean;
  /** Resumptions after a dropped connection before giving up. */
  retries: number;
  /** Bytes of the file written so far, after each piece. */
  onBytes(loadedBytes: number): void;
  explain: HubFailureMessage;
}

/** A connection that ended before the file did. */
class DroppedError extends Error {}

/** fetch's error for a body cut short: a TypeError ("terminated") carrying the socket's error. */
function droppedBody(e: unknown): boolean {
  return e instanceof TypeError && (e as { cause?: unknown }).cause !== undefined;
}

/** The pause before retrying a connection that brought no bytes at all (a refused or reset one): a hub that is restarting gets a moment. */
const RETRY_PAUSE_MS = 1_000;

/**
 * Downloads one file into `target.file`, resuming after what is there: a Range request for the rest (a
 * server that ignores Range, or answers for other bytes, sends the whole file again), and after a dropped
 * connection up to `retries` times. Returns the digest of the whole file; a file longer than listed is an
 * IntegrityError. What was written stays for the next attempt.
 */
export async function downloadFile(client: HubClient, target: DownloadTarget): Promise<FileDigest> {
  let have = await stat(target.file).then((s) => s.size, () => 0);
  if (have > target.size) {
    await rm(target.file, { force: true });
    have = 0;
  }
  const restart = () => createDigester(target.gitBlob ? target.size : undefined);
  let digester = restart();
  if (have > 0) {
    have = await streamFile(target.file, (chunk) => digester.update(chunk));
    target.onBytes(have);
  }
  // An empty file needs no request, but must exist.
  if (target.size === 0) await (await open(target.file, 'w')).close();
  let failures = 0;
  const giveUp = (why: string) =>
    new ModelLoadError(`the download of "${target.name}" from ${client.endpoint} stopped after ${have} of ${target.size} bytes (${why}); run the same command again to resume it`, {
      file: target.name,
      loadedBytes: have,
      totalBytes: target.size,
    });
  while (have < target.size) {
    const before = have;
    let handle: FileHandle | undefined;
    try {
      const response = await hubGet(client, target.url, `"${target.name}"`, target.explain, have > 0 ? { range: `bytes=${have}-` } : {});
      const from = response.status === 206 ? Number(/^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '')?.[1]) : 0;
      if (response.status === 416 || from !== have) {
        // The server sends the file from its start (it ignored Range), or other bytes than asked: start over.
        digester = restart();
        have = 0;
        if (response.status !== 200) {
          await response.body?.cancel().catch(() => undefined);
          throw new DroppedError(`the server answered a Range request with other bytes (HTTP ${response.status})`);
        }
      }
      handle = await open(target.file, have === 0 ? 'w' : 'a');
      for await (const chunk of (response.body ?? []) as unknown as AsyncIterable<Uint8Array>) {
        if (have + chunk.byteLength > target.size) {
          throw new IntegrityError(`"${target.name}" is longer than the ${target.size} bytes the hub lists: the download is corrupt or was modified, which may indicate tampering`, { file: target.name });
        }
        await handle.write(chunk);
        digester.update(chunk);
        have += chunk.byteLength;
        target.onBytes(have);
      }
      if (have < target.size) throw new DroppedError('the server ended the file early');
      await handle.sync();
    } catch (e) {
      // Retried: a dropped or refused connection. Not: the caller's abort, a bad file, an HTTP answer (404, 403...).
      const refused = e instanceof ModelLoadError && e.details['network'] === true;
      if (!(e instanceof DroppedError || refused || droppedBody(e)) || aborted(client, e)) throw e;
      failures += 1;
      if (failures > target.retries) throw giveUp(e instanceof DroppedError ? e.message : networkCause(refused ? e.cause : e));
      if (have === before) await delay(RETRY_PAUSE_MS, undefined, client.signal ? { signal: client.signal } : {});
    } finally {
      await handle?.close();
    }
  }
  return digester.digest();
}
