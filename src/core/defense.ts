import { ContextTooLongError, GuardAbortedError, InvalidInputError, serializeError, type WireError } from './errors.js';
import { maskAssistantTextAfter } from './context.js';
import { messageRef } from './message-ref.js';
import type { FlaggedSpan } from './attribution.js';
import type { ResolvedDefenseOptions, ResolvedGuardOptions } from './options.js';
import type { GuardInput, JsonValue, Message, ToolCall } from './types.js';
import { failureVerdict, type Verdict } from './verdict.js';

/** A sentence's character range in a text: `text.slice(start, end)`, without surrounding whitespace. */
export interface SentenceRange {
  start: number;
  end: number;
}

const CLOSERS = new Set(['"', "'", ')', ']', '}', '»', '”', '’']);

/** Splits text into sentence ranges: a sentence ends at . ! or ? followed by whitespace or the end, or at a line break (tool outputs are often line-structured). */
export function splitSentences(text: string): SentenceRange[] {
  const ranges: SentenceRange[] = [];
  let start = -1;
  const close = (endExclusive: number): void => {
    if (start < 0) return;
    let end = endExclusive;
    while (end > start && /\s/.test(text[end - 1] ?? '')) end -= 1;
    if (end > start) ranges.push({ start, end });
    start = -1;
  };
  for (let i = 0; i < text.length; i += 1) {
    const ch = text[i] ?? '';
    if (ch === '\n' || ch === '\r') {
      close(i);
      continue;
    }
    if (start < 0) {
      if (!/\s/.test(ch)) start = i;
      if (start < 0) continue;
    }
    if (ch === '.' || ch === '!' || ch === '?') {
      let j = i + 1;
      while (j < text.length && ('.!?'.includes(text[j] ?? '') || CLOSERS.has(text[j] ?? ''))) j += 1;
      // "$450.00" or "example.com" keep going: only punctuation followed by whitespace or the end closes a sentence.
      if (j >= text.length || /\s/.test(text[j] ?? '')) {
        close(j);
        i = j - 1;
      }
    }
  }
  close(text.length);
  return ranges;
}

function checkRanges(text: string, ranges: readonly SentenceRange[]): void {
  let previousEnd = 0;
  ranges.forEach((r, i) => {
    if (!Number.isInteger(r.start) || !Number.isInteger(r.end) || r.start < previousEnd || r.end < r.start || r.end > text.length) {
      throw new InvalidInputError(
        `ranges[${i}]: received {start: ${r.start}, end: ${r.end}}; ranges must be integer, ascending, non-overlapping and within the text (length ${text.length}).`,
        { index: i },
      );
    }
    previousEnd = r.end;
  });
}

/** Replaces each given range with `replacement`; consecutive ranges separated only by whitespace collapse into one replacement. */
export function redactSentences(text: string, ranges: readonly SentenceRange[], replacement: string): string {
  checkRanges(text, ranges);
  let out = '';
  let cursor = 0;
  let i = 0;
  while (i < ranges.length) {
    const first = ranges[i] as SentenceRange;
    let last = first;
    while (i + 1 < ranges.length) {
      const next = ranges[i + 1] as SentenceRange;
      if (text.slice(last.end, next.start).trim() !== '') break;
      last = next;
      i += 1;
    }
    out += text.slice(cursor, first.start) + replacement;
    cursor = last.end;
    i += 1;
  }
  return out + text.slice(cursor);
}

/** The texts of a leave-one-out over sentences: entry i is the text with sentence i removed (the engine scores them in one batch). */
export function sentenceAblations(text: string, ranges: readonly SentenceRange[]): string[] {
  checkRanges(text, ranges);
  return ranges.map((r) => text.slice(0, r.start) + text.slice(r.end));
}

/** Options of chooseSentencesToRedact. */
export interface SentenceChoiceOptions {
  /**
   * A sentence is redacted when its normalised leave-one-out delta exceeds this.
   * @defaultValue 0
   */
  threshold?: number | undefined;
  /**
   * Most sentences chosen, strongest first; null means no limit.
   * @defaultValue null
   */
  maxSentences?: number | null | undefined;
  /**
   * When no sentence passes the threshold, still choose the strongest one if its delta is positive (the span was flagged as a whole).
   * @defaultValue true
   */
  fallbackToTop?: boolean | undefined;
}

/** Picks the sentences whose removal lowers the action's log-prob the most (delta = lp_full - lp_without_sentence, normalised); returns ascending sentence indexes. */
export function chooseSentencesToRedact(sentenceDeltas: readonly number[], options: SentenceChoiceOptions = {}): number[] {
  const threshold = options.threshold ?? 0;
  const max = options.maxSentences ?? null;
  const order = sentenceDeltas
    .map((delta, index) => ({ delta, index }))
    .filter((d) => Number.isFinite(d.delta))
    .sort((a, b) => b.delta - a.delta || a.index - b.index);
  let chosen = order.filter((d) => d.delta > threshold);
  const top = order[0];
  if (chosen.length === 0 && (options.fallbackToTop ?? true) && top !== undefined && top.delta > 0) chosen = [top];
  if (max !== null) chosen = chosen.slice(0, max);
  return chosen.map((d) => d.index).sort((a, b) => a - b);
}

/** What a sanitizer receives for one flagged span. */
export interface SanitizeRequest {
  span: FlaggedSpan;
  /** The span's current text. */
  content: string;
  /** The conversation the span sits in (read only). */
  messages: readonly Message[];
  /** The call that was flagged. */
  action: ToolCall;
}

/** A sanitizer returns the span's text with instructions removed (empty string when it was pure injection). */
export type Sanitizer = (request: SanitizeRequest) => Promise<string>;

/**
 * The most sentences, and characters, of one flagged result the local redactor scores one by one. Each
 * sentence is one more copy of the text, scored with the whole conversation in one window: a result far
 * longer than any window (a padded page of a million characters) would cost a copy per sentence and could
 * not be scored anyway, so it is withheld instead, at once.
 */
export const MAX_REDACTED_SPAN_SENTENCES = 256;
export const MAX_REDACTED_SPAN_CHARS = 65_536;

/** Builds the local, LLM-free sanitizer: leave-one-out over the span's sentences (scored by the caller's engine in one batch), then redaction of the sentences that carry the attribution. */
export function createLocalRedactor(
  scoreSentenceAblations: (request: SanitizeRequest, ablatedTexts: string[], ranges: SentenceRange[]) => Promise<number[]>,
  options: Pick<ResolvedDefenseOptions, 'redactionText' | 'sentenceDeltaThreshold' | 'maxRedactedSentences'>,
): Sanitizer {
  return async (request) => {
    if (request.content.length > MAX_REDACTED_SPAN_CHARS) {
      throw new ContextTooLongError(
        `the flagged result has ${request.content.length} characters, more than the ${MAX_REDACTED_SPAN_CHARS} the local redactor scores sentence by sentence; it is withheld instead`,
        { messageIndex: request.span.messageIndex, chars: request.content.length, maxChars: MAX_REDACTED_SPAN_CHARS },
      );
    }
    const ranges = splitSentences(request.content);
    if (ranges.length === 0) return request.content;
    if (ranges.length > MAX_REDACTED_SPAN_SENTENCES) {
      throw new ContextTooLongError(
        `the flagged result has ${ranges.length} sentences, more than the ${MAX_REDACTED_SPAN_SENTENCES} the local redactor scores one by one; it is withheld instead`,
        { messageIndex: request.span.messageIndex, sentences: ranges.length, maxSentences: MAX_REDACTED_SPAN_SENTENCES },
      );
    }
    const deltas = await scoreSentenceAblations(request, sentenceAblations(request.content, ranges), ranges);
    if (deltas.length !== ranges.length) {
      throw new InvalidInputError(`scoreSentenceAblations: returned ${deltas.length} deltas for ${ranges.length} sentences; return one per sentence.`);
    }
    const chosen = chooseSentencesToRedact(deltas, { threshold: options.sentenceDeltaThreshold, maxSentences: options.maxRedactedSentences });
    return redactSentences(
      request.content,
      chosen.map((i) => ranges[i] as SentenceRange),
      options.redactionText,
    );
  };
}

/** The caller's side of the defense: the agent regenerates, the guard re-checks. */
export interface DefenseCallbacks {
  /** Sanitises one flagged span; without it (or when it throws) the span's text is withheld. */
  sanitize?: Sanitizer | undefined;
  /** Asks the agent for a new call on the cleaned messages (tool results stay tool messages); null when it proposes no call. */
  regenerate: (messages: Message[], info: { attempt: number; rejected: readonly ToolCall[] }) => Promise<ToolCall | null>;
  /** Re-checks a regenerated call with the guard. */
  check: (input: GuardInput) => Promise<Verdict>;
  /** Abort signal; only `aborted` is read. */
  signal?: { readonly aborted: boolean } | undefined;
}

/** How one flagged span was cleaned. */
export interface SanitizedSpan extends FlaggedSpan {
  method: 'sanitizer' | 'withheld' | 'kept';
  before: string;
  after: string;
  /** The sanitizer's failure, when it threw and the span was withheld instead. */
  error?: WireError;
}

/** One regeneration attempt and what became of it. */
export interface DefenseAttempt {
  attempt: number;
  action: ToolCall | null;
  verdict: Verdict | null;
  outcome: 'accepted' | 'rejected' | 'no-call' | 'same-as-flagged';
}

/** The result of the defense: the call to run (or null when none is safe) and everything done to get it. */
export interface DefenseResult {
  /** Whether the defense pipeline ran (only when spans were flagged). */
  defended: boolean;
  originalAction: ToolCall;
  originalVerdict: Verdict;
  /** The call to execute, or null when the call is blocked. */
  finalAction: ToolCall | null;
  /** The verdict for finalAction, or a block verdict when finalAction is null. */
  finalVerdict: Verdict;
  /** The cleaned conversation given to the agent. */
  messages: Message[];
  sanitizedSpans: SanitizedSpan[];
  maskedIndices: number[];
  droppedTrailingAssistant: number;
  attempts: DefenseAttempt[];
  /** Why the call was blocked or replaced. */
  message: string;
}

function canonicalJson(value: JsonValue): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const keys = Object.keys(value).sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k] as JsonValue)}`).join(',')}}`;
}

/** Whether two calls have the same tool and the same arguments (key order ignored). */
export function sameCall(a: ToolCall, b: ToolCall): boolean {
  return a.name === b.name && canonicalJson(a.arguments) === canonicalJson(b.arguments);
}

function throwIfAborted(signal: DefenseCallbacks['signal']): void {
  if (signal?.aborted === true) throw new GuardAbortedError('The defense was aborted by the caller.');
}

function describeSpans(spans: readonly FlaggedSpan[]): string {
  return spans.map((s) => `${s.toolName ?? 'unnamed tool'} (${messageRef(s.messageIndex)})`).join(', ');
}

/** Runs the defense when the verdict flagged spans: sanitise flagged spans in parallel, mask reasoning after the earliest one, drop trailing assistant messages, regenerate and re-check (bounded); blocks when no safe call remains. */
export async function runDefense(input: GuardInput, verdict: Verdict, options: Pick<ResolvedGuardOptions, 'cotRedactionText' | 'onError' | 'defense'>, callbacks: DefenseCallbacks): Promise<DefenseResult> {
  const base = {
    originalAction: input.action,
    originalVerdict: verdict,
    sanitizedSpans: [] as SanitizedSpan[],
    maskedIndices: [] as number[],
    droppedTrailingAssistant: 0,
    attempts: [] as DefenseAttempt[],
  };
  if (!verdict.detected || verdict.flagged.length === 0) {
    const allowed = verdict.decision === 'allow';
    return {
      ...base,
      defended: false,
      finalAction: allowed ? input.action : null,
      finalVerdict: verdict,
      messages: input.messages.map((m) => ({ ...m })),
      message: allowed ? 'No span was flagged; the original call stands.' : `The original call is blocked (${verdict.reason}); the defense runs only on flagged spans.`,
    };
  }
  throwIfAborted(callbacks.signal);
  const d = options.defense;
  const flagged = [...verdict.flagged].sort((a, b) => a.messageIndex - b.messageIndex);
  for (const span of flagged) {
    const m = input.messages[span.messageIndex];
    if (m === undefined || m.role !== 'tool') {
      throw new InvalidInputError(`verdict.flagged: span ${span.spanId} points at ${messageRef(span.messageIndex)}, which is ${m === undefined ? 'missing' : `a ${m.role} message`}; flagged spans are tool messages.`);
    }
  }

  // All flagged spans are sanitised concurrently: latency is that of the slowest span, not the sum (reference defect 9).
  const sanitizedSpans = await Promise.all(
    flagged.map(async (span): Promise<SanitizedSpan> => {
      const before = (input.messages[span.messageIndex] as Message).content;
      if (!d.sanitize) return { ...span, method: 'kept', before, after: before };
      if (callbacks.sanitize === undefined) return { ...span, method: 'withheld', before, after: d.withheldText };
      try {
        const after = await callbacks.sanitize({ span, content: before, messages: input.messages, action: input.action });
        if (typeof after !== 'string') throw new InvalidInputError(`sanitize: returned ${typeof after}; a sanitizer returns the cleaned text as a string.`);
        return { ...span, method: 'sanitizer', before, after };
      } catch (error) {
        // A failed sanitizer must not leave the injection in place, so the whole span is withheld.
        return { ...span, method: 'withheld', before, after: d.withheldText, error: serializeError(error) };
      }
    }),
  );
  throwIfAborted(callbacks.signal);
  const afterByIndex = new Map(sanitizedSpans.map((s) => [s.messageIndex, s.after]));
  let messages: Message[] = input.messages.map((m, i) => {
    const after = afterByIndex.get(i);
    // Tool results stay tool messages: recasting them as user turns would give residual injections user authority (reference defect 7).
    return after === undefined ? { ...m } : { ...m, content: after };
  });
  let maskedIndices: number[] = [];
  const earliest = flagged[0] as FlaggedSpan;
  if (d.maskReasoning) {
    const masked = maskAssistantTextAfter(messages, earliest.messageIndex, options.cotRedactionText);
    messages = masked.messages;
    maskedIndices = masked.maskedIndices;
  }
  let dropped = 0;
  while (messages.length > 0 && messages[messages.length - 1]?.role === 'assistant') {
    messages = messages.slice(0, -1);
    dropped += 1;
  }

  const attempts: DefenseAttempt[] = [];
  const rejected: ToolCall[] = [input.action];
  for (let attempt = 1; attempt <= d.maxRegenerations; attempt += 1) {
    throwIfAborted(callbacks.signal);
    const call = await callbacks.regenerate(
      messages.map((m) => ({ ...m })),
      { attempt, rejected: [...rejected] },
    );
    throwIfAborted(callbacks.signal);
    if (call === null) {
      attempts.push({ attempt, action: null, verdict: null, outcome: 'no-call' });
      // An agent that proposes no call on the cleaned context has nothing left to run; asking again would only invite the same injection.
      break;
    }
    if (rejected.some((r) => sameCall(r, call))) {
      attempts.push({ attempt, action: call, verdict: null, outcome: 'same-as-flagged' });
      continue;
    }
    let recheck: Verdict;
    try {
      recheck = await callbacks.check({ ...input, messages: messages.map((m) => ({ ...m })), action: call });
    } catch (error) {
      recheck = failureVerdict(error, options, true);
    }
    if (recheck.decision === 'allow') {
      attempts.push({ attempt, action: call, verdict: recheck, outcome: 'accepted' });
      return {
        ...base,
        defended: true,
        finalAction: call,
        finalVerdict: recheck,
        messages,
        sanitizedSpans,
        maskedIndices,
        droppedTrailingAssistant: dropped,
        attempts,
        message: `Replaced "${input.action.name}", which was driven by ${describeSpans(flagged)}, with "${call.name}" regenerated on the cleaned context and re-checked (attempt ${attempt}).`,
      };
    }
    attempts.push({ attempt, action: call, verdict: recheck, outcome: 'rejected' });
    rejected.push(call);
  }

  const tried = attempts.length === 0 ? 'no regeneration was allowed (defense.maxRegenerations = 0)' : `${attempts.length} regeneration attempt(s) gave no call that passed the re-check`;
  const message = `Blocked "${input.action.name}": it was driven by untrusted content in ${describeSpans(flagged)}, and ${tried}.`;
  const finalVerdict: Verdict = { ...verdict, decision: 'block', message };
  return {
    ...base,
    defended: true,
    finalAction: null,
    finalVerdict,
    messages,
    sanitizedSpans,
    maskedIndices,
    droppedTrailingAssistant: dropped,
    attempts,
    message,
  };
}
