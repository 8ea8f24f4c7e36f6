/**
 * The scorer host: the far side of the scorer protocol (protocol.ts), in a Web Worker, a Node worker
 * thread or a child process. It loads one model, runs score requests one at a time with one
 * AbortController each (so `cancel` stops that request's model work), answers pings at once, and
 * releases the model on `dispose`. It decides nothing about a check: the conductor's side does.
 */
import { InvalidOptionsError, serializeError } from '../core/errors.js';
import { abortedError } from '../core/deadline.js';
import type { GuardProgress } from '../core/guard-api.js';
import type { LoadedScorer, Scorer, ScorerInfo } from '../core/scorer-port.js';
import type { ScorerCall, ScorerReply } from './protocol.js';

/** What a host needs from its shell: how to load its model, how to answer, and how to end. */
export interface ScorerHostOptions<L> {
  /** Loads and verifies the model `load` names. */
  load(load: L, onProgress: (event: GuardProgress) => void): Promise<LoadedScorer>;
  post(reply: ScorerReply): void;
  /** Ends the host once its model is released (a child process exits; a worker is terminated by its client instead). */
  exit?(): void;
}

/** The scorer's info as plain data: only the port's fields cross. */
export function plainInfo(info: ScorerInfo): ScorerInfo {
  const { backend, model, variant, maxContextTokens, maxTextChars, scoring, attention, attentionUnavailable, chatFormat, shape, logitsUnavailable, rendering } = info;
  return {
    backend,
    model,
    variant,
    maxContextTokens,
    maxTextChars,
    scoring,
    attention,
    attentionUnavailable,
    chatFormat,
    logitsUnavailable: logitsUnavailable ?? null,
    ...(shape ? { shape } : {}),
    ...(rendering !== undefined ? { rendering } : {}),
  };
}

/** Creates the host's message handler: give it every call the conductor's side sends. */
export function createScorerHost<L>(options: ScorerHostOptions<L>): (call: ScorerCall<L>) => void {
  let loading: Promise<Scorer> | null = null;
  const calls = new Map<number, AbortController>();
  // One model, one run at a time.
  let queue: Promise<unknown> = Promise.resolve();

  function load(request: L): void {
    if (loading !== null) {
      options.post({ type: 'load-failed', error: serializeError(new InvalidOptionsError('The scorer host was asked to load twice; start a new one instead.')) });
      return;
    }
    loading = (async () => {
      const loaded = await options.load(request, (event) => options.post({ type: 'progress', event }));
      options.post({ type: 'loaded', info: plainInfo(loaded.scorer.info), modelOptions: loaded.modelOptions, fallbackReason: loaded.fallbackReason ?? null });
      return loaded.scorer;
    })();
    loading.catch((error: unknown) => options.post({ type: 'load-failed', error: serializeError(error) }));
  }

  function score(call: Extract<ScorerCall<L>, { type: 'score' }>): void {
    // Registered before anything waits, so a cancel sent right after the request always finds it.
    const controller = new AbortController();
    calls.set(call.id, controller);
    const run = async () => {
      try {
        if (loading === null) throw new InvalidOptionsError('The scorer host got a score request before load; the client must load first.');
        const scorer = await loading;
        if (controller.signal.aborted) throw abortedError();
        const scores = await scorer.score({ ...call.request, signal: controller.signal });
        options.post({ type: 'scored', id: call.id, scores });
      } catch (error) {
        options.post({ type: 'failed', id: call.id, error: serializeError(error) });
      } finally {
        calls.delete(call.id);
      }
    };
    const next = queue.then(run);
    queue = next.catch(() => undefined);
  }

  async function dispose(): Promise<void> {
    for (const controller of calls.values()) controller.abort();
    const scorer = await loading?.catch(() => null);
    await scorer?.dispose().catch(() => undefined);
    options.post({ type: 'disposed' });
    options.exit?.();
  }

  return (call) => {
    switch (call.type) {
      case 'load':
        return load(call.load);
      case 'score':
        return score(call);
      case 'cancel':
        calls.get(call.id)?.abort();
        return;
      case 'ping':
        return options.post({ type: 'pong', id: call.id });
      case 'dispose':
        void dispose();
        return;
    }
  };
}
