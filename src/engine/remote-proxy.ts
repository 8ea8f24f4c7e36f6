/**
 * A remote proxy: the guard's variants scored by an OpenAI-compatible completions server that
 * returns prompt log-probs (vLLM's `/v1/completions` with `echo` and `logprobs`), for proxies too
 * big for the user's device.
 *
 * Rendering, truncation and tokenisation stay here, with the proxy's own tokenizer: the server gets
 * token ids, echoes them back as ids (vLLM's `return_tokens_as_token_ids`), and every echoed id is
 * checked against what was sent, so no boundary token is lost, merged or re-tokenised on the way.
 * All of a call's variants go in one request (up to `maxSequencesPerRequest`).
 */
import { RemoteProxyError } from '../core/errors.js';
import { validateRemoteProxyOptions, type RemoteProxyOptions } from '../core/runtime-options.js';
import type { JsonObject } from '../core/types.js';
import { engineFromParts, type ProxyEngine, type SequenceRunner } from './engine.js';
import { maxPositionsFromConfig } from './model-config.js';
import { proxyTokenizerFor } from './rendering.js';
import type { TokenizerModelFiles } from './model-files.js';
import { totalTokens, type ScoreResult, type ScoreSequence } from './scorer.js';

export { validateRemoteProxyOptions, type RemoteProxyOptions } from '../core/runtime-options.js';

/** The request body the scoring uses: prompt log-probs of token-id prompts, echoed as ids. */
export function completionRequest(model: string, prompts: number[][]): JsonObject {
  return {
    model,
    prompt: prompts,
    // vLLM's forward pass always generates one token; its log-prob is ignored.
    max_tokens: 1,
    temperature: 0,
    echo: true,
    logprobs: 1,
    return_tokens_as_token_ids: true,
  };
}

interface CompletionChoice {
  index: number;
  logprobs: { tokens: string[]; token_logprobs: Array<number | null> };
}

/**
 * Reads the prompt log-probs of each prompt from a completions response, checking that the server
 * scored exactly the ids that were sent; entry j is log P(prompt[j] | prompt[..j]), null for j = 0.
 */
export function parseCompletionResponse(body: unknown, prompts: readonly number[][]): Array<Array<number | null>> {
  const fail = (message: string, details: JsonObject = {}): never => {
    throw new RemoteProxyError(`remote proxy response: ${message}`, details);
  };
  const choices = (body as { choices?: unknown } | null)?.choices;
  if (!Array.isArray(choices)) return fail('no "choices" array');
  if (choices.length !== prompts.length) fail(`${choices.length} choices for ${prompts.length} prompts`, { choices: choices.length, prompts: prompts.length });
  const out = new Array<Array<number | null>>(prompts.length);
  for (const c of choices as CompletionChoice[]) {
    const i = c?.index;
    if (!Number.isInteger(i) || i < 0 || i >= prompts.length || out[i] !== undefined) fail(`choice index ${JSON.stringify(i)} is missing, repeated or out of range`);
    const tokens = c.logprobs?.tokens;
    const lps = c.logprobs?.token_logprobs;
    const sent = prompts[i]!;
    if (!Array.isArray(tokens) || !Array.isArray(lps) || lps.length < sent.length || tokens.length < sent.length) {
      fail(`choice ${i} has no log-probs for its ${sent.length} prompt tokens; the request needs echo and logprobs (vLLM /v1/completions)`, { index: i });
    }
    if (!/^token_id:\d+$/.test(String(tokens![0]))) {
      fail(`choice ${i} echoes tokens as text (${JSON.stringify(tokens![0])}), not ids: EdgeArmor needs vLLM's return_tokens_as_token_ids to check token alignment`, { index: i });
    }
    for (let j = 0; j < sent.length; j++) {
      if (tokens![j] !== `token_id:${sent[j]}`) {
        fail(`choice ${i}: the server scored ${JSON.stringify(tokens![j])} at position ${j}, EdgeArmor sent token_id:${sent[j]}; its tokenizer or prompt handling differs`, {
          index: i,
          position: j,
        });
      }
    }
    out[i] = lps!.slice(0, sent.length).map((x) => (typeof x === 'number' ? x : null));
  }
  return out;
}

/** Action-token log-probs of each sequence from its prompt log-probs. */
function actionLogProbs(seq: ScoreSequence, promptLogProbs: Array<number | null>): Float64Array {
  const lp = new Float64Array(seq.action.length);
  for (let k = 0; k < seq.action.length; k++) {
    const x = promptLogProbs[seq.context.length + k];
    if (typeof x !== 'number' || !Number.isFinite(x)) {
      throw new RemoteProxyError(`remote proxy response: no finite log-prob for action token ${k}`, { token: k });
    }
    lp[k] = x;
  }
  return lp;
}

/** A fetch that reports unreachable servers and HTTP errors as RemoteProxyError. */
async function requestJson(url: string, init: { method: 'GET' | 'POST'; body?: string; apiKey?: string; signal?: AbortSignal }): Promise<unknown> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.apiKey !== undefined) headers['authorization'] = `Bearer ${init.apiKey}`;
  let response: Response;
  try {
    response = await fetch(url, { method: init.method, headers, ...(init.body !== undefined ? { body: init.body } : {}), ...(init.signal ? { signal: init.signal } : {}) });
  } catch (e) {
    if (init.signal?.aborted) throw e;
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    throw new RemoteProxyError(`could not reach the remote proxy at ${url}: ${(e as Error).message}${cause ? ` (${cause})` : ''}`, { url }, { cause: e });
  }
  const text = await response.text();
  if (!response.ok) {
    throw new RemoteProxyError(`the remote proxy at ${url} answered HTTP ${response.status}: ${text.slice(0, 300)}`, { url, status: response.status });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new RemoteProxyError(`the remote proxy at ${url} answered with invalid JSON: ${text.slice(0, 120)}`, { url });
  }
}

function endpoint(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}${path}`;
}

/**
 * Connects to a remote proxy: checks that the server serves the model, and builds an engine that
 * renders and tokenises here with `files` (the proxy's tokenizer) and scores on the server.
 */
export async function createRemoteEngine(files: TokenizerModelFiles, options: RemoteProxyOptions, render: { chatTemplate?: string } = {}): Promise<ProxyEngine> {
  const { url, model, apiKey } = validateRemoteProxyOptions(options);
  const { tokenizer, format, rendering } = proxyTokenizerFor(files, render.chatTemplate);
  const auth = apiKey !== undefined ? { apiKey } : {};
  const listed = (await requestJson(endpoint(url, '/v1/models'), { method: 'GET', ...auth })) as { data?: Array<{ id?: unknown; max_model_len?: unknown }> };
  const entry = listed?.data?.find((m) => m.id === model);
  if (!entry) {
    const ids = (listed?.data ?? []).map((m) => JSON.stringify(m.id)).join(', ');
    throw new RemoteProxyError(`the remote proxy at ${url} does not serve "${model}"; it serves: ${ids || 'nothing'}`, { url, model });
  }
  // The server's window holds the prompt and the one token it generates.
  const serverMax = typeof entry.max_model_len === 'number' && entry.max_model_len > 1 ? entry.max_model_len - 1 : Infinity;
  const perRequest = options.maxSequencesPerRequest ?? 64;
  const completions = endpoint(url, '/v1/completions');

  const run: SequenceRunner = async (sequences, signal) => {
    const results: ScoreResult[] = [];
    for (let start = 0; start < sequences.length; start += perRequest) {
      signal?.throwIfAborted();
      const batch = sequences.slice(start, start + perRequest);
      const prompts = batch.map((s) => [...s.context, ...s.action]);
      const body = await requestJson(completions, { method: 'POST', body: JSON.stringify(completionRequest(model, prompts)), ...auth, ...(signal ? { signal } : {}) });
      const parsed = parseCompletionResponse(body, prompts);
      batch.forEach((s, i) => results.push({ tokenLogProbs: actionLogProbs(s, parsed[i]!) }));
    }
    return { results, computedTokens: totalTokens(sequences) };
  };

  return engineFromParts({
    info: {
      model: `${model} at ${new URL(url).host}`,
      backend: 'remote',
      variant: 'remote',
      maxContextTokens: Math.min(maxPositionsFromConfig(files.config), serverMax),
      attention: false,
      scoring: null,
      attentionSource: null,
      attentionUnavailable: 'a remote proxy returns log-probs only',
      // The server decides which logits it computes.
      logitsSource: null,
      logitsUnavailable: null,
    },
    tokenizer,
    format,
    rendering,
    run,
    dispose: async () => undefined,
  });
}
