/**
 * Guard calls as the model's sequences: each request rendered, truncated or measured, its variants (and sentence
 * replacements) encoded; one request run alone, or several in one run of the model so that what their sequences
 * share is computed once (`scoreMany`: the calls of one conversation).
 */
import { InvalidInputError } from '../core/errors.js';
import type { ScoreRequest } from '../core/scorer-port.js';
import { templateContextSizes, type encodeSegmentedCall } from './call-encoding.js';
import { boundLongTexts } from './bounded-text.js';
import type { EngineInfo, EngineScores, SequenceRunner } from './engine.js';
import type { ScoreResult, ScoreSequence } from './scorer.js';
import type { ProxyTokenizer } from './tokenizer.js';

/** One request encoded: its sequences for the model, and how their results become its scores (or its sizes, nothing to run). */
interface PreparedRequest {
  sequences: ScoreSequence[];
  finish: (results: readonly ScoreResult[], computedTokens: number) => EngineScores;
}

async function prepareRequest(tokenizer: ProxyTokenizer, info: EngineInfo, encode: typeof encodeSegmentedCall, request: ScoreRequest): Promise<PreparedRequest> {
  const { variants } = request;
  const budget = Math.min(info.maxContextTokens, request.maxContextTokens ?? Infinity);
  // Long texts are cut to what the window could hold and tokenized in chunks that yield and stop on the signal.
  const bounded = await boundLongTexts(tokenizer, request.context, info.maxContextTokens, request.signal);
  const { context } = bounded;
  const encoded = await encode(bounded.tokenizer, context, request.actionText, budget);
  // Too long for the window (the encoder had to cut): a measuring request gets each part's tokens instead of scores.
  if (request.ifTooLong === 'measure' && (encoded.truncation.droppedToolDefinitions || Object.keys(encoded.truncation.shortenedMessages).length > 0)) {
    const sizes = encoded.sizes ?? templateContextSizes(bounded.tokenizer, context);
    const measured: EngineScores = { logProbs: new Map(), actionLayout: undefined, actionTokenIds: [], layout: { user: [], tools: [], toolResults: [], actionStart: 0 }, truncation: encoded.truncation, computedTokens: 0, sizes };
    return { sequences: [], finish: () => measured };
  }
  if (Object.keys(bounded.cutChars).length > 0) encoded.truncation.charsCutBeforeTokenizing = bounded.cutChars;
  const { action } = encoded;
  const sequences: ScoreSequence[] = variants.map((v) => ({
    context: [...encoded.contextIds(v.keep, new Set(v.dropTools ?? []), v.callSentencesOf === undefined ? undefined : { messageIndex: v.callSentencesOf, dropCallSentences: true }), ...action.prefix],
    action: action.ids,
    withAttention: request.withAttention && info.attention && v.kind === 'full',
  }));
  const replacements = request.replacements ?? [];
  const all = context.messages.map((_, i) => i);
  for (const r of replacements) {
    if (context.messages[r.messageIndex] === undefined) throw new InvalidInputError(`replacement "${r.id}": received message index ${r.messageIndex}; allowed: 0 to ${context.messages.length - 1}`, { messageIndex: r.messageIndex });
    sequences.push({ context: [...encoded.contextIds(all, new Set(), r), ...action.prefix], action: action.ids, withAttention: false });
  }
  const finish = (results: readonly ScoreResult[], computedTokens: number): EngineScores => {
    const logProbs = new Map<string, Float64Array>();
    variants.forEach((v, i) => logProbs.set(v.id, results[i]!.tokenLogProbs));
    replacements.forEach((r, i) => logProbs.set(r.id, results[variants.length + i]!.tokenLogProbs));
    const fullIndex = variants.findIndex((v) => v.kind === 'full');
    const attention = fullIndex >= 0 ? results[fullIndex]!.attention : undefined;
    return {
      logProbs,
      actionLayout: encoded.actionLayout,
      actionTokenIds: action.ids,
      ...(attention ? { attention } : {}),
      layout: encoded.layout,
      truncation: encoded.truncation,
      computedTokens,
    };
  };
  return { sequences, finish };
}

export async function scoreRequest(
  tokenizer: ProxyTokenizer,
  info: EngineInfo,
  run: SequenceRunner,
  encode: typeof encodeSegmentedCall,
  request: ScoreRequest,
): Promise<EngineScores> {
  const prepared = await prepareRequest(tokenizer, info, encode, request);
  if (prepared.sequences.length === 0) return prepared.finish([], 0);
  const { results, computedTokens } = await run(prepared.sequences, request.signal);
  return prepared.finish(results, computedTokens);
}

/**
 * Several requests in one run of the model: their sequences go to the runner together, so on the prefix path
 * one trie spans them all and a prefix they share (the calls of one conversation) is computed once. Each
 * request's scores are those it gets alone; `computedTokens` of the run is the first scored request's (the
 * others' are 0), so the sum over the batch is what the model computed.
 */
export async function scoreRequests(
  tokenizer: ProxyTokenizer,
  info: EngineInfo,
  run: SequenceRunner,
  encode: typeof encodeSegmentedCall,
  requests: readonly ScoreRequest[],
  signal: AbortSignal | undefined,
): Promise<EngineScores[]> {
  const prepared: PreparedRequest[] = [];
  for (const request of requests) prepared.push(await prepareRequest(tokenizer, info, encode, request));
  const sequences = prepared.flatMap((p) => p.sequences);
  const { results, computedTokens } = sequences.length > 0 ? await run(sequences, signal) : { results: [], computedTokens: 0 };
  let offset = 0;
  let charged = false;
  return prepared.map((p) => {
    const mine = results.slice(offset, offset + p.sequences.length);
    offset += p.sequences.length;
    const owed = p.sequences.length > 0 && !charged;
    if (owed) charged = true;
    return p.finish(mine, owed ? computedTokens : 0);
  });
}
