/**
 * A scoring server that speaks the part of vLLM's OpenAI-compatible API the remote proxy uses
 * (`GET /v1/models`; `POST /v1/completions` with token-id prompts, `echo` and `logprobs`) and
 * computes with a local model. It is what the remote-proxy tests run against, and it lets a team
 * serve an EdgeArmor-format proxy from one bigger machine: `edgearmor serve-proxy`.
 *
 * Node only. Requests are scored one at a time (one onnxruntime session), each prompt's positions in chunks
 * whose logits fit a fixed budget (ProxyEngine.scorePrompts): the protocol asks for a log-prob at every position,
 * which over a model's whole vocabulary in one pass is gigabytes for a few thousand tokens.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ProxyEngine } from './engine.js';

/** Options of {@link startProxyServer}. */
export interface ProxyServerOptions {
  /** The engine that computes the log-probs. */
  engine: ProxyEngine;
  /** The model name clients must ask for. @defaultValue the engine's model name */
  servedModelName?: string;
  /** When set, requests need `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** @defaultValue 0 (any free port) */
  port?: number;
  /** @defaultValue '127.0.0.1' */
  host?: string;
  /** Largest request body accepted. @defaultValue 32 MiB */
  maxBodyBytes?: number;
  /** Page origins allowed to call the server from a browser (CORS), as vLLM's `--allowed-origins`. @defaultValue none */
  allowedOrigins?: readonly string[];
}

/** A running proxy server. */
export interface RunningProxyServer {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  servedModelName: string;
  /** Completion requests answered. */
  readonly requests: number;
  close(): Promise<void>;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function isIdList(x: unknown): x is number[] {
  return Array.isArray(x) && x.length > 0 && x.every((t) => Number.isInteger(t) && t >= 0);
}

async function readBody(req: IncomingMessage, limit: number): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new HttpError(413, `request body over ${limit} bytes`);
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    throw new HttpError(400, `request body is not valid JSON: ${(e as Error).message}`);
  }
}

/** Starts the server; resolves once it listens. */
export async function startProxyServer(options: ProxyServerOptions): Promise<RunningProxyServer> {
  const { engine } = options;
  const name = options.servedModelName ?? engine.info.model;
  const maxBody = options.maxBodyBytes ?? 32 * 1024 * 1024;
  const vocab = engine.tokenizer.vocabSize;
  let queue: Promise<unknown> = Promise.resolve();
  let requests = 0;

  async function completions(body: unknown): Promise<unknown> {
    const b = (body ?? {}) as Record<string, unknown>;
    if (b['model'] !== name) throw new HttpError(404, `The model \`${String(b['model'])}\` does not exist; this server serves "${name}".`);
    if (b['echo'] !== true || typeof b['logprobs'] !== 'number') {
      throw new HttpError(400, 'this scoring server answers prompt log-prob requests only: set echo: true and logprobs');
    }
    const maxTokens = b['max_tokens'] ?? 16;
    if (maxTokens !== 0 && maxTokens !== 1) throw new HttpError(400, `max_tokens: received ${JSON.stringify(maxTokens)}; this scoring server generates at most 1 token`);
    const raw = b['prompt'];
    const prompts = isIdList(raw) ? [raw] : Array.isArray(raw) && raw.length > 0 && raw.every(isIdList) ? (raw as number[][]) : null;
    if (!prompts) throw new HttpError(400, 'prompt: this server takes token ids only (a list of ids, or a list of lists of ids)');
    const tooBig = prompts.flat().find((t) => t >= vocab);
    if (tooBig !== undefined) throw new HttpError(400, `prompt: token id ${tooBig} is outside the vocabulary (size ${vocab})`);
    const longest = Math.max(...prompts.map((p) => p.length));
    if (longest + Number(maxTokens) > engine.info.maxContextTokens) {
      throw new HttpError(400, `prompt of ${longest} tokens plus ${String(maxTokens)} generated exceeds max_model_len ${engine.info.maxContextTokens}`);
    }
    const generate = maxTokens === 1;
    const scored = await engine.scorePrompts(prompts, { withNextToken: generate });
    const asIds = b['return_tokens_as_token_ids'] === true;
    const show = (id: number) => (asIds ? `token_id:${id}` : engine.tokenizer.decode([id]));
    requests++;
    return {
      id: `cmpl-edgearmor-${requests}`,
      object: 'text_completion',
      created: Math.floor(Date.now() / 1000),
      model: name,
      choices: prompts.map((p, i) => {
        const r = scored[i]!;
        const ids = generate && r.nextToken ? [...p, r.nextToken.id] : p;
        const lps: Array<number | null> = [null, ...r.tokenLogProbs, ...(generate && r.nextToken ? [r.nextToken.logProb] : [])];
        return {
          index: i,
          text: engine.tokenizer.decode(ids),
          logprobs: {
            tokens: ids.map(show),
            token_logprobs: lps,
            top_logprobs: lps.map((lp, j) => (lp === null ? null : { [show(ids[j]!)]: lp })),
            text_offset: [],
          },
          finish_reason: 'length',
        };
      }),
      usage: {
        prompt_tokens: prompts.reduce((a, p) => a + p.length, 0),
        completion_tokens: generate ? prompts.length : 0,
        total_tokens: prompts.reduce((a, p) => a + p.length, 0) + (generate ? prompts.length : 0),
      },
    };
  }

  async function route(req: IncomingMessage): Promise<unknown> {
    if (options.apiKey !== undefined && req.headers['authorization'] !== `Bearer ${options.apiKey}`) throw new HttpError(401, 'missing or wrong API key');
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (req.method === 'GET' && path === '/v1/models') {
      return { object: 'list', data: [{ id: name, object: 'model', owned_by: 'edgearmor', max_model_len: engine.info.maxContextTokens }] };
    }
    if (req.method === 'POST' && path === '/v1/completions') {
      const body = await readBody(req, maxBody);
      const run = queue.then(() => completions(body));
      queue = run.catch(() => undefined);
      return run;
    }
    throw new HttpError(404, `no route ${req.method} ${path}; this server has GET /v1/models and POST /v1/completions`);
  }

  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const origin = req.headers['origin'];
    if (origin !== undefined && options.allowedOrigins?.includes(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Vary', 'Origin');
      if (req.method === 'OPTIONS') {
        res.writeHead(204, { 'Access-Control-Allow-Methods': 'GET, POST', 'Access-Control-Allow-Headers': 'authorization, content-type', 'Access-Control-Max-Age': '600' });
        res.end();
        return;
      }
    }
    route(req).then(
      (body) => send(res, 200, body),
      (e: unknown) => {
        const status = e instanceof HttpError ? e.status : 500;
        send(res, status, { error: { message: (e as Error).message, type: status === 500 ? 'InternalServerError' : 'BadRequestError', code: status } });
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { address, port } = server.address() as AddressInfo;
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `http://${host}:${port}`,
    servedModelName: name,
    get requests() {
      return requests;
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((e) => (e ? reject(e) : resolve()));
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
