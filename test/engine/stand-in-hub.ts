/**
 * A stand-in for the Hugging Face Hub on 127.0.0.1: the URL layout `edgearmor pull` uses (revision, tree
 * with pagination, resolve with a redirect for LFS files, Range requests), the hub's X-Error-Code
 * answers, and faults a test can set: a connection dropped mid-file, a changed byte, Range ignored.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, relative, sep } from 'node:path';
import { gitBlobSha1 } from '../../src/engine/files-node.js';

/** One repository: its files (paths relative to `dir`) at one commit. */
export interface StandInRepo {
  dir: string;
  files: string[];
  commit: string;
}

/** What the hub saw of one request. */
export interface SeenRequest {
  path: string;
  range: string | null;
  authorization: string | null;
}

/** Faults the next requests meet. */
export interface HubFaults {
  /** Send only `bytes` bytes of `file`, then drop the connection, `times` times. */
  dropAfter: { file: string; bytes: number; times: number } | null;
  /** Flip one byte in the middle of this file. */
  corrupt: string | null;
  /** Answer Range requests with the whole file (200). */
  ignoreRange: boolean;
}

export interface StandInHub {
  url: string;
  requests: SeenRequest[];
  faults: HubFaults;
  close(): Promise<void>;
}

/** Tree entries per page, so that the fixture's listing spans pages. */
const TREE_PAGE = 4;
const LFS = /\.onnx(_data(_\d+)?|\.data)?$/;

/** Every file below `dir`, as repository paths. */
export function repoFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
}

function treeOf(repo: StandInRepo): unknown[] {
  const dirs = [...new Set(repo.files.filter((f) => f.includes('/')).map((f) => f.slice(0, f.lastIndexOf('/'))))];
  return [
    ...dirs.map((path) => ({ type: 'directory', path, oid: 'd'.repeat(40), size: 0 })),
    ...repo.files.map((path) => {
      const bytes = readFileSync(join(repo.dir, path));
      if (!LFS.test(path)) return { type: 'file', path, size: bytes.byteLength, oid: gitBlobSha1(bytes) };
      const sha256 = createHash('sha256').update(bytes).digest('hex');
      const pointer = `version https://git-lfs.github.com/spec/v1\noid sha256:${sha256}\nsize ${bytes.byteLength}\n`;
      return { type: 'file', path, size: bytes.byteLength, oid: gitBlobSha1(Buffer.from(pointer)), lfs: { oid: sha256, size: bytes.byteLength, pointerSize: pointer.length } };
    }),
  ];
}

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
}

/** Starts the stand-in hub with these repositories (by repo id). */
export async function startStandInHub(repos: Record<string, StandInRepo>): Promise<StandInHub> {
  const requests: SeenRequest[] = [];
  const faults: HubFaults = { dropAfter: null, corrupt: null, ignoreRange: false };
  const trees = new Map(Object.entries(repos).map(([id, r]) => [id, treeOf(r)]));
  let base = '';

  const serveFile = (req: IncomingMessage, res: ServerResponse, repo: StandInRepo, file: string) => {
    if (!repo.files.includes(file)) return json(res, 404, { error: 'Entry not found' }, { 'x-error-code': 'EntryNotFound' });
    const bytes = readFileSync(join(repo.dir, file));
    if (faults.corrupt === file) bytes[bytes.length >> 1] = bytes[bytes.length >> 1]! ^ 0xff;
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    const from = range && !faults.ignoreRange ? Number(range[1]) : 0;
    if (from >= bytes.byteLength && from > 0) return res.writeHead(416, { 'content-range': `bytes */${bytes.byteLength}` }).end();
    const body = bytes.subarray(from);
    res.writeHead(from > 0 ? 206 : 200, {
      'content-length': String(body.byteLength),
      'accept-ranges': 'bytes',
      ...(from > 0 ? { 'content-range': `bytes ${from}-${bytes.byteLength - 1}/${bytes.byteLength}` } : {}),
    });
    const drop = faults.dropAfter;
    if (drop?.file === file && drop.times > 0) {
      drop.times -= 1;
      // Ending the socket, not destroying it, so the bytes written all arrive before the connection closes.
      res.write(body.subarray(0, drop.bytes), () => res.socket?.end());
      return;
    }
    res.end(body);
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://hub');
    const path = decodeURIComponent(url.pathname);
    requests.push({ path: `${path}${url.search}`, range: req.headers.range ?? null, authorization: req.headers.authorization ?? null });
    const api = /^\/api\/models\/([^/]+\/[^/]+)\/(revision|tree)\/([^/]+)$/.exec(path);
    if (api) {
      const [, id, kind, rev] = api;
      const repo = repos[id!];
      if (!repo) return json(res, 404, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
      if (rev !== 'main' && rev !== repo.commit) return json(res, 404, { error: `Invalid rev id: ${rev}` }, { 'x-error-code': 'RevisionNotFound' });
      if (kind === 'revision') return json(res, 200, { id, sha: repo.commit });
      const tree = trees.get(id!)!;
      const cursor = Number(url.searchParams.get('cursor') ?? 0);
      const next = cursor + TREE_PAGE < tree.length ? { link: `<${base}/api/models/${id}/tree/${rev}?recursive=true&cursor=${cursor + TREE_PAGE}>; rel="next"` } : {};
      return json(res, 200, tree.slice(cursor, cursor + TREE_PAGE), next);
    }
    // The hub sends LFS files from its CDN: a redirect that fetch follows with the Range header.
    const resolved = /^\/(lfs\/)?([^/]+\/[^/]+)\/resolve\/([0-9a-f]{40})\/(.+)$/.exec(path);
    const repo = resolved ? repos[resolved[2]!] : undefined;
    if (!resolved || !repo || resolved[3] !== repo.commit) return json(res, 404, { error: 'Repository not found' }, { 'x-error-code': 'RepoNotFound' });
    if (!resolved[1] && LFS.test(resolved[4]!)) return res.writeHead(302, { location: `/lfs${path}` }).end();
    serveFile(req, res, repo, resolved[4]!);
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    requests,
    faults,
    close: async () => {
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    },
  };
}
