import * as v from 'valibot';
import { normalizeTools } from './tools.js';
import { EdgeArmorError, InvalidInputError } from './errors.js';
import { describeValue, formatIssuePath, isPlainObject, nameProblem, textProblem, toJsonValue } from './json.js';
import { MAX_ACTION_ARGUMENTS_CHARS, MAX_FIELD_CHARS, MAX_MESSAGES, MAX_NAME_CHARS, MAX_SPANS, MAX_TOOLS, MAX_TOTAL_CHARS } from './limits.js';
import type { GuardInput, JsonValue, Message, Role, ToolCall, ToolSpec } from './types.js';

// valibot was chosen over zod/mini for bundle size (a guard-case schema bundles to ~2 KB gzip against ~6 KB) with the same
// static type inference; its issues are turned into InvalidInputError here, so no valibot type leaks out of the core.

const ROLES = ['system', 'user', 'assistant', 'tool'] as const satisfies readonly Role[];

/** Help text per field, used when a required field is missing. */
const FIELD_HELP: Readonly<Record<string, string>> = {
  messages: 'an array of messages',
  action: 'the proposed call {name, arguments, raw_text?}',
  role: 'one of "system", "user", "assistant", "tool"',
  content: 'a string (or null for no text)',
  name: 'a non-empty name',
  arguments: 'any JSON value (use {} for a call without arguments)',
};

const expecting =
  (allowed: string) =>
  (issue: v.BaseIssue<unknown>): string =>
    `received ${describeValue(issue.input)}; expected ${allowed}`;

const missingField = (issue: v.BaseIssue<unknown>): string => {
  const key = issue.path?.[issue.path.length - 1]?.key;
  return `missing; expected ${typeof key === 'string' ? (FIELD_HELP[key] ?? 'a value') : 'a value'}`;
};

function checked<T>(problem: (value: T) => string | null): v.RawCheckAction<T> {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const reason = problem(dataset.value);
    if (reason !== null) addIssue({ message: reason });
  });
}

const Text = v.pipe(v.string(expecting('a string')), checked<string>((s) => textProblem(s)));
const Name = v.pipe(v.string(expecting('a non-empty name')), checked<string>((s) => nameProblem(s, MAX_NAME_CHARS)));

/** Any JSON value, checked and copied by toJsonValue; its problems keep their path below the field. */
const Json = v.pipe(
  v.unknown(),
  v.rawTransform<unknown, JsonValue>(({ dataset, addIssue, NEVER }) => {
    try {
      return toJsonValue(dataset.value, '');
    } catch (error) {
      if (!(error instanceof InvalidInputError)) throw error;
      const rel = typeof error.details['relativePath'] === 'string' ? error.details['relativePath'] : '';
      const reason = typeof error.details['reason'] === 'string' ? error.details['reason'] : error.message.replace(/^: /, '');
      addIssue({ message: `${rel}\u0000${reason}` });
      return NEVER;
    }
  }),
);

/** A plain object validated by `entries`; arrays, Dates, Maps and class instances are refused before their keys are read. */
function plainObject<const E extends v.ObjectEntries>(entries: E, allowed: string) {
  return v.pipe(v.custom<Record<string, unknown>>(isPlainObject, expecting(allowed)), v.object(entries, missingField));
}

/** An array of at most `max` items, the length checked before any item is read. */
function boundedArray<const S extends v.GenericSchema>(item: S, max: number, allowed: string) {
  return v.pipe(
    v.custom<unknown[]>(Array.isArray, expecting(allowed)),
    v.check((a: unknown[]) => a.length <= max, (issue: v.CheckIssue<unknown[]>) => `received ${issue.input.length} items; at most ${max} are allowed`),
    v.array(item, expecting(allowed)),
  );
}

const HistoryToolCall = plainObject({ name: Name, arguments: Json }, 'a tool call {name, arguments}');

const MessageSchema = plainObject(
  {
    role: v.picklist(ROLES, expecting('one of "system", "user", "assistant", "tool"')),
    content: v.nullable(Text),
    tool_calls: v.nullish(boundedArray(HistoryToolCall, MAX_SPANS, 'an array of tool calls')),
    tool_name: v.nullish(Name),
  },
  'a message object {role, content, tool_calls?, tool_name?}',
);

const ActionSchema = plainObject(
  { name: Name, arguments: Json, raw_text: v.nullish(Text) },
  'the proposed call {name, arguments, raw_text?}',
);

const ToolNames = boundedArray(Name, MAX_TOOLS, 'an array of tool names');

/** The schema of a guard case (dev.jsonl shape); extra fields are ignored, tool definitions are normalised afterwards. */
export const GuardCaseSchema = plainObject(
  {
    messages: boundedArray(MessageSchema, MAX_MESSAGES, 'an array of messages'),
    action: ActionSchema,
    untrusted_tools: v.nullish(ToolNames),
    trusted_tools: v.nullish(ToolNames),
    tools: v.nullish(boundedArray(v.unknown(), MAX_TOOLS, 'an array of tool definitions')),
  },
  'a guard case object {messages, action}',
);

/** The statically inferred output of GuardCaseSchema, before the cross-field checks. */
export type ParsedGuardCase = v.InferOutput<typeof GuardCaseSchema>;

function issueToError(issue: v.BaseIssue<unknown>): InvalidInputError {
  let where = formatIssuePath(issue.path, 'input');
  let reason = issue.message;
  const sep = reason.indexOf('\u0000');
  if (sep >= 0) {
    where += reason.slice(0, sep);
    reason = reason.slice(sep + 1);
  }
  return new InvalidInputError(`${where}: ${reason}.`, { where, received: describeValue(issue.input) });
}

/** Throws unless the messages hold a user request; shared by parseGuardInput and buildContext so both say the same. */
export function requireUserRequest(messages: readonly Pick<Message, 'role'>[]): void {
  if (messages.some((m) => m.role === 'user')) return;
  throw new InvalidInputError(`input.messages: received ${messages.length} messages with no user message; attribution needs the user's request (at least one message with role "user").`, {
    where: 'input.messages',
    roles: messages.map((m) => m.role),
  });
}

/** Throws when more tool results than MAX_SPANS could become untrusted spans. */
export function requireSpanLimit(count: number, what = 'tool results'): void {
  if (count <= MAX_SPANS) return;
  throw new InvalidInputError(`input.messages: received ${count} ${what}; at most ${MAX_SPANS} are allowed (each is scored as its own variant).`, {
    where: 'input.messages',
    received: count,
    allowed: MAX_SPANS,
  });
}

function totalChars(value: JsonValue): number {
  if (typeof value === 'string') return value.length;
  if (value === null || typeof value !== 'object') return 0;
  if (Array.isArray(value)) return value.reduce<number>((n, x) => n + totalChars(x), 0);
  return Object.entries(value).reduce<number>((n, [k, x]) => n + k.length + totalChars(x), 0);
}

function toMessage(raw: ParsedGuardCase['messages'][number], i: number): Message {
  const where = `input.messages[${i}]`;
  const message: Message = { role: raw.role, content: raw.content ?? '' };
  if (raw.tool_calls !== undefined && raw.tool_calls !== null) {
    if (raw.role !== 'assistant') {
      throw new InvalidInputError(`${where}.tool_calls: received tool calls on a "${raw.role}" message; only assistant messages carry tool calls.`, { where: `${where}.tool_calls` });
    }
    message.tool_calls = raw.tool_calls.map((c) => ({ name: c.name, arguments: c.arguments }));
  }
  if (raw.tool_name !== undefined && raw.tool_name !== null) {
    if (raw.role !== 'tool') {
      throw new InvalidInputError(`${where}.tool_name: received ${describeValue(raw.tool_name)} on a "${raw.role}" message; only tool messages carry a tool name.`, { where: `${where}.tool_name` });
    }
    message.tool_name = raw.tool_name;
  } else if (raw.role === 'tool') {
    // The trust lists match results by tool name, and AgentDojo always records it; an unnamed result is refused rather than guessed.
    throw new InvalidInputError(`${where}.tool_name: missing; expected the non-empty name of the tool that produced this result.`, { where: `${where}.tool_name` });
  }
  return message;
}

/** Validates an unknown value as a guard case (the dev.jsonl shape; extra fields are ignored) and returns a clean copy; every problem is an InvalidInputError naming the field. */
export function parseGuardInput(value: unknown): GuardInput {
  let parsed: ParsedGuardCase;
  try {
    const result = v.safeParse(GuardCaseSchema, value, { abortEarly: true });
    if (!result.success) throw issueToError(result.issues[0]);
    parsed = result.output;
  } catch (error) {
    if (error instanceof EdgeArmorError) throw error;
    // Getters and proxies can throw while being read; that is bad input, not a guard bug.
    throw new InvalidInputError(`input: the value could not be read (${error instanceof Error ? error.message : String(error)}).`, { where: 'input' }, { cause: error });
  }
  const messages = parsed.messages.map(toMessage);
  requireUserRequest(messages);
  requireSpanLimit(messages.filter((m) => m.role === 'tool').length);
  const action: ToolCall = { name: parsed.action.name, arguments: parsed.action.arguments };
  if (parsed.action.raw_text !== undefined && parsed.action.raw_text !== null) action.raw_text = parsed.action.raw_text;
  const argumentChars = JSON.stringify(action.arguments).length;
  if (argumentChars > MAX_ACTION_ARGUMENTS_CHARS) {
    throw new InvalidInputError(`input.action.arguments: received ${argumentChars} characters of JSON; at most ${MAX_ACTION_ARGUMENTS_CHARS} are allowed (the action is scored whole, never truncated).`, {
      where: 'input.action.arguments',
      received: argumentChars,
      allowed: MAX_ACTION_ARGUMENTS_CHARS,
    });
  }
  const input: GuardInput = { messages, action };
  if (parsed.untrusted_tools !== undefined && parsed.untrusted_tools !== null) input.untrusted_tools = [...parsed.untrusted_tools];
  if (parsed.trusted_tools !== undefined && parsed.trusted_tools !== null) input.trusted_tools = [...parsed.trusted_tools];
  if (parsed.tools !== undefined && parsed.tools !== null) input.tools = normalizeTools(parsed.tools, 'input.tools');
  const total =
    messages.reduce((n, m) => n + m.content.length + (m.tool_name?.length ?? 0) + (m.tool_calls ?? []).reduce((k, c) => k + c.name.length + totalChars(c.arguments), 0), 0) +
    action.name.length +
    argumentChars +
    (action.raw_text?.length ?? 0) +
    (input.tools as ToolSpec[] | undefined ?? []).reduce((n, t) => n + t.name.length + t.description.length + totalChars(t.parameters), 0);
  if (total > MAX_TOTAL_CHARS) {
    throw new InvalidInputError(`input: received ${total} characters in all; at most ${MAX_TOTAL_CHARS} are allowed per case (and ${MAX_FIELD_CHARS} per field).`, {
      where: 'input',
      received: total,
      allowed: MAX_TOTAL_CHARS,
    });
  }
  return input;
}
