/**
 * Documented maximums of one guard case, enforced by parseGuardInput (and, for spans, by buildContext).
 * Beyond the token level these bound memory and tokenizer time before any model work; the token-level limit
 * is the proxy model's context window, handled by the engine's truncation policy (docs/security-model.md).
 */

/** Most messages in one case; AgentDojo's dev set peaks at 47, so this leaves 40x headroom. */
export const MAX_MESSAGES = 2048;

/** Most untrusted spans (tool results) in one case: each adds a scored variant, so this bounds the batch. */
export const MAX_SPANS = 256;

/** Most tool definitions in one case: with tool leave-one-out each adds a scored variant. */
export const MAX_TOOLS = 256;

/** Most UTF-16 code units in any one string field (message content, description, raw_text, a JSON string). */
export const MAX_FIELD_CHARS = 1_000_000;

/** Most UTF-16 code units over all strings of one case (contents, names, descriptions, argument JSON). */
export const MAX_TOTAL_CHARS = 8_000_000;

/** Most UTF-16 code units in a name: role-free identifiers such as tool names and the action's name. */
export const MAX_NAME_CHARS = 256;

/** Most characters of the action's arguments as JSON (JSON.stringify); the action is never truncated, so it must fit the window. */
export const MAX_ACTION_ARGUMENTS_CHARS = 65_536;

/** Deepest nesting of a JSON value (arguments, schemas); deeper values would risk stack overflows in serialisers. */
export const MAX_JSON_DEPTH = 64;

/** All limits as one frozen object, for documentation and error details. */
export const LIMITS = Object.freeze({
  MAX_MESSAGES,
  MAX_SPANS,
  MAX_TOOLS,
  MAX_FIELD_CHARS,
  MAX_TOTAL_CHARS,
  MAX_NAME_CHARS,
  MAX_ACTION_ARGUMENTS_CHARS,
  MAX_JSON_DEPTH,
});
