/**
 * The remote proxy (vLLM's completions protocol) against the local protocol server computing with
 * the embedded model: the same verdicts as the in-process guard, one request per guard call, token
 * alignment checked, and every failure typed (and, on a privileged call, blocked).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Worker } from 'node:worker_threads';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGuard } from '../../src/page/create-guard.js';
import { RemoteProxyError } from '../../src/core/errors.js';
import type { Verdict } from '../../src/core/verdict.js';
import { createEngine, type ProxyEngine } from '../../src/engine/engine.js';
import { buildManifest, directoryReader, embeddedModelDir } from '../../src/engine/files-node.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { startProxyServer, type RunningProxyServer } from '../../src/engine/proxy-server.js';
import { completionRequest, parseCompletionResponse, validateRemoteProxyOptions } from '../../src/engine/remote-proxy.js';
import { createNodeGuard } from '../../src/node.js';
import { findCase, guardInputOf } from '../../src/scenarios/index.js';
import { chatmlTokenizerFiles } from './chatml-fixture.js';
import { requirement } from '../requirements.js';

const MODEL_DIR = embeddedModelDir();
const MODEL_TIMEOUT_MS = 180_000;
// Both sides run the q4 model on onnxruntime-node; the server scores every prompt position in one
// pass while the local guard branches from shared prefixes, so sums differ by float rounding only.
const DELTA_TOLERANCE = 1e-3;
const SERVED = 'edgearmor-proxy-test';

describe('remote proxy options and responses', () => {
  it('names the wrong field and what is allowed', () => {
    expect(() => validateRemoteProxyOptions('http://x')).toThrow(/remoteProxy: received "http:\/\/x"; allowed: \{ url, model/);
    expect(() => validateRemoteProxyOptions({ url: 'ftp://x', model: 'm' })).toThrow(/remoteProxy\.url: received "ftp:\/\/x"; allowed: an absolute http\(s\) URL/);
    expect(() => validateRemoteProxyOptions({ url: 'http://x:8000', model: '' })).toThrow(/remoteProxy\.model: received ""/);
    expect(() => validateRemoteProxyOptions({ url: 'http://x:8000', model: 'm', maxSequencesPerRequest: 0 })).toThrow(/maxSequencesPerRequest: received 0; allowed: an integer >= 1/);
    expect(() => validateRemoteProxyOptions({ url: 'http://x:8000', model: 'm', key: 1 })).toThrow(/unknown key\(s\) "key"/);
    expect(validateRemoteProxyOptions({ url: 'https://x', model: 'm', apiKey: 'k' })).toEqual({ url: 'https://x', model: 'm', apiKey: 'k' });
  });

  it('asks for prompt log-probs of token ids, echoed as ids', () => {
    expect(completionRequest('m', [[1, 2]])).toEqual({
      model: 'm',
      prompt: [[1, 2]],
      max_tokens: 1,
      temperature: 0,
      echo: true,
      logprobs: 1,
      return_tokens_as_token_ids: true,
    });
  });

  const choice = (index: number, ids: number[], lps: Array<number | null>) => ({ index, logprobs: { tokens: ids.map((t) => `token_id:${t}`), token_logprobs: lps } });

  it('reads prompt log-probs in prompt order, whatever the order of the choices', () => {
    const body = { choices: [choice(1, [5, 6, 9], [null, -0.5, -3]), choice(0, [5, 7, 9], [null, -1, -2])] };
    expect(parseCompletionResponse(body, [[5, 7], [5, 6]])).toEqual([
      [null, -1],
      [null, -0.5],
    ]);
  });

  it('refuses responses that do not score exactly the ids sent', () => {
    const sent = [[5, 7]];
    expect(() => parseCompletionResponse({ choices: [choice(0, [5, 8], [null, -1])] }, sent)).toThrow(RemoteProxyError);
    expect(() => parseCompletionResponse({ choices: [choice(0, [5, 8], [null, -1])] }, sent)).toThrow(/scored "token_id:8" at position 1, EdgeArmor sent token_id:7/);
    const asText = { choices: [{ index: 0, logprobs: { tokens: ['Hi', ' there'], token_logprobs: [null, -1] } }] };
    expect(() => parseCompletionResponse(asText, sent)).toThrow(/echoes tokens as text .* return_tokens_as_token_ids/);
    expect(() => parseCompletionResponse({ choices: [choice(0, [5], [null])] }, sent)).toThrow(/no log-probs for its 2 prompt tokens/);
    expect(() => parseCompletionResponse({ choices: [] }, sent)).toThrow(/0 choices for 1 prompts/);
    expect(() => parseCompletionResponse({ error: 'x' }, sent)).toThrow(/no "choices" array/);
  });
});

describe.skipIf(!requirement(existsSync(resolve(MODEL_DIR, 'manifest.json')), `the model (${MODEL_DIR})`))('remote proxy on the local protocol server (embedded model)', () => {
  let engine: ProxyEngine;
  let server: RunningProxyServer;
  const guards: Array<{ dispose(): Promise<void> }> = [];
  const track = <G extends { dispose(): Promise<void> }>(g: G): G => (guards.push(g), g);

  beforeAll(async () => {
    engine = await createEngine(await loadModelFiles(directoryReader(MODEL_DIR), 'q4'), { backend: 'node' });
    server = await startProxyServer({ engine, servedModelName: SERVED, apiKey: 'secret' });
  }, MODEL_TIMEOUT_MS);

  afterAll(async () => {
    for (const g of guards) await g.dispose();
    await server?.close();
    await engine?.dispose();
  });

  const remote = () => ({ url: server.url, model: SERVED, apiKey: 'secret' });

  const expectSameVerdict = (a: Verdict, b: Verdict) => {
    expect(a.decision).toBe(b.decision);
    expect(a.detected).toBe(b.detected);
    expect(a.flagged).toEqual(b.flagged);
    expect(a.attribution!.user.normalizedDelta).toBeCloseTo(b.attribution!.user.normalizedDelta, -Math.log10(DELTA_TOLERANCE));
    a.attribution!.spans.forEach((s, i) => expect(Math.abs(s.normalizedDelta - b.attribution!.spans[i]!.normalizedDelta)).toBeLessThan(DELTA_TOLERANCE));
  };

  it(
    'gives the in-process verdicts on the demo cases, with one request per guard call',
    async () => {
      const local = track(createNodeGuard({ backends: ['node'] }));
      const viaServer = track(createNodeGuard({ remoteProxy: remote(), timeoutMs: MODEL_TIMEOUT_MS }));
      const status = await viaServer.ready;
      expect(status).toMatchObject({ state: 'ready', backend: 'remote', variant: 'remote', attention: false });
      expect(status.model).toBe(`${SERVED} at ${new URL(server.url).host}`);
      expect(status.maxContextTokens).toBe(engine.info.maxContextTokens - 1);

      for (const pick of ['injection', 'benign'] as const) {
        const c = findCase('travel', pick, 1)!;
        const before = server.requests;
        const [r, l] = [await viaServer.check(guardInputOf(c)), await local.check(guardInputOf(c))];
        expect(server.requests - before).toBe(1);
        expect(r.backend).toBe('remote');
        expect(r.proxy).toBe(status.model);
        expectSameVerdict(r, l);
      }
      const poisoned = findCase('banking', 'poisoning', 1)!;
      const r = await viaServer.check(guardInputOf(poisoned));
      const l = await local.check(guardInputOf(poisoned));
      expectSameVerdict(r, l);
      expect(r.toolPoisoning!.unavailable.join()).toMatch(/a remote proxy returns log-probs only; MindGuard falls back to leave-one-out/);
      r.toolPoisoning!.leaveOneOut!.tools.forEach((t, i) => expect(Math.abs(t.normalizedDelta - l.toolPoisoning!.leaveOneOut!.tools[i]!.normalizedDelta)).toBeLessThan(DELTA_TOLERANCE));
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    'crosses the worker boundary: a worker guard with remoteProxy scores on the server',
    async () => {
      const workerUrl = new URL('../../src/worker.ts', import.meta.url);
      const bootstrap = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then(({ register }) => { register(); return import(${JSON.stringify(workerUrl.href)}); })`;
      const guard = track(
        createGuard({ worker: () => new Worker(bootstrap, { eval: true }), modelDir: MODEL_DIR, remoteProxy: remote(), timeoutMs: MODEL_TIMEOUT_MS }),
      );
      expect(await guard.ready).toMatchObject({ backend: 'remote' });
      const before = server.requests;
      const verdict = await guard.check(guardInputOf(findCase('travel', 'injection', 1)!));
      expect(server.requests - before).toBe(1);
      expect(verdict).toMatchObject({ backend: 'remote', reason: 'model', decision: 'block' });
    },
    MODEL_TIMEOUT_MS,
  );

  it(
    "renders with the tokenizer's own chat template when it is not EdgeArmor's format (ChatML tokenizer directory)",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'edgearmor-chatml-'));
      try {
        const read = (f: string) => JSON.parse(readFileSync(join(MODEL_DIR, f), 'utf8')) as Record<string, unknown>;
        const { tokenizerJson, tokenizerConfig } = chatmlTokenizerFiles(read('tokenizer.json'), read('tokenizer_config.json'));
        const files: Record<string, string> = {
          'config.json': readFileSync(join(MODEL_DIR, 'config.json'), 'utf8'),
          'tokenizer.json': JSON.stringify(tokenizerJson),
          'tokenizer_config.json': JSON.stringify(tokenizerConfig),
        };
        for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
        writeFileSync(join(dir, 'manifest.json'), JSON.stringify(await buildManifest(dir, 'chatml-fixture')));
        const guard = track(createNodeGuard({ modelDir: dir, remoteProxy: remote(), timeoutMs: MODEL_TIMEOUT_MS }));
        const before = server.requests;
        const verdict = await guard.check(guardInputOf(findCase('travel', 'injection', 1)!));
        // ChatML renders each tool's whole JSON schema: this case no longer fits the window and is scored in windows,
        // all of them in one request (measuring it asked the server nothing: the tokenizer is here).
        expect(verdict.windows?.count, JSON.stringify(verdict.truncation)).toBeGreaterThan(1);
        expect(server.requests - before).toBe(1);
        expect(verdict).toMatchObject({ backend: 'remote', reason: 'model' });
        expect(verdict.attribution!.variants.map((v) => v.id)).toEqual(expect.arrayContaining(['full', 'no-user', 'no-span:0']));
        verdict.attribution!.variants.forEach((v) => expect(Number.isFinite(v.logProb)).toBe(true));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
    MODEL_TIMEOUT_MS,
  );

  it('refuses a model the server does not serve, and a wrong API key, naming both', async () => {
    const wrongModel = track(createNodeGuard({ remoteProxy: { ...remote(), model: 'gemma-3-12b' } }));
    await expect(wrongModel.ready).rejects.toThrow(new RegExp(`does not serve "gemma-3-12b"; it serves: "${SERVED}"`));
    const wrongKey = track(createNodeGuard({ remoteProxy: { ...remote(), apiKey: 'nope' } }));
    await expect(wrongKey.ready).rejects.toMatchObject({ code: 'remote-proxy-failed', message: expect.stringMatching(/HTTP 401: .*wrong API key/) });
  });

  it('applies the failure policy when the server goes away: a privileged call is blocked with a typed error', async () => {
    const other = await startProxyServer({ engine, servedModelName: SERVED });
    const guard = track(createNodeGuard({ remoteProxy: { url: other.url, model: SERVED } }));
    await guard.ready;
    await other.close();
    const verdict = await guard.check(guardInputOf(findCase('travel', 'benign', 1)!));
    expect(verdict).toMatchObject({ decision: 'block', reason: 'failure-policy', error: { code: 'remote-proxy-failed' } });
    expect(verdict.error!.message).toMatch(/could not reach the remote proxy at http:\/\/127\.0\.0\.1:\d+\/v1\/completions/);
  });

  it('lets only the allowed page origins call it from a browser (CORS)', async () => {
    const open = await startProxyServer({ engine, servedModelName: SERVED, allowedOrigins: ['http://127.0.0.1:5173'] });
    try {
      const preflight = (origin: string) =>
        fetch(`${open.url}/v1/completions`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } });
      const allowed = await preflight('http://127.0.0.1:5173');
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1:5173');
      expect(allowed.headers.get('access-control-allow-headers')).toContain('content-type');
      const other = await fetch(`${open.url}/v1/models`, { headers: { origin: 'http://evil.example' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await open.close();
    }
  });

  it("scores a long prompt's positions in chunks that continue its cache (bounded logits whatever the vocabulary): the log-probs and next token of one whole pass", async () => {
    // Three prompts over three chunks each (255 positions a chunk at this 4,096-token vocabulary), two sharing their first 500 tokens.
    let seed = 7;
    const ids = (n: number) => Array.from({ length: n }, () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), 10 + (seed % 4000)));
    const shared = ids(500);
    const prompts = [
      [...shared, ...ids(200)],
      [...shared, ...ids(150)],
      ids(640),
    ];
    const chunked = await engine.scorePrompts(prompts, { withNextToken: true });
    const whole = await engine.scoreTokens(prompts.map((p) => ({ context: p.slice(0, 1), action: p.slice(1), withNextToken: true })));
    chunked.forEach((r, i) => {
      expect(r.tokenLogProbs).toHaveLength(prompts[i]!.length - 1);
      expect(Math.max(...r.tokenLogProbs.map((x, j) => Math.abs(x - whole[i]!.tokenLogProbs[j]!)))).toBeLessThan(DELTA_TOLERANCE);
      expect(r.nextToken!.id).toBe(whole[i]!.nextToken!.id);
    });
    // One token: no log-prob, only the next token.
    const [one] = await engine.scorePrompts([[42]], { withNextToken: true });
    expect(one!.tokenLogProbs).toHaveLength(0);
    expect(one!.nextToken!.id).toBe((await engine.scoreTokens([{ context: [42], action: [], withNextToken: true }]))[0]!.nextToken!.id);
  });

  it('answers protocol misuse with vLLM-style errors', async () => {
    const post = async (body: unknown) => {
      const res = await fetch(`${server.url}/v1/completions`, { method: 'POST', headers: { authorization: 'Bearer secret' }, body: JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as { error: { message: string } } };
    };
    const ok = { model: SERVED, prompt: [1, 2], echo: true, logprobs: 1, max_tokens: 1 };
    expect(await post({ ...ok, prompt: 'Hello' })).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/token ids only/) } } });
    expect(await post({ ...ok, echo: false })).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/set echo: true and logprobs/) } } });
    expect(await post({ ...ok, max_tokens: 5 })).toMatchObject({ status: 400 });
    expect(await post({ ...ok, prompt: [1, engine.tokenizer.vocabSize] })).toMatchObject({ status: 400, body: { error: { message: expect.stringMatching(/outside the vocabulary/) } } });
    expect(await post({ ...ok, model: 'x' })).toMatchObject({ status: 404 });
    const good = await post(ok);
    expect(good.status).toBe(200);
    const lp = (good.body as unknown as { choices: Array<{ logprobs: { token_logprobs: Array<number | null>; tokens: string[] } }> }).choices[0]!.logprobs;
    expect(lp.token_logprobs).toHaveLength(3);
    expect(lp.token_logprobs[0]).toBeNull();
    expect(lp.tokens.slice(0, 2)).toEqual([engine.tokenizer.decode([1]), engine.tokenizer.decode([2])]);
  });
});
