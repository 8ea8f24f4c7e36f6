/**
 * The proxy's chat format as token segments (mirror of model/chat_format.py).
 *
 * Every text field sits between two control tokens and is encoded on its own, so a conversation's
 * ids are the concatenation of its messages' ids: ablation variants are built by leaving messages
 * out, with no re-tokenisation and no boundary token lost or merged.
 */
import type { ProxyTokenizer } from './tokenizer.js';

type Encoder = Pick<ProxyTokenizer, 'encodeText' | 'controlId'>;

/** A message as the format needs it. */
export interface FormatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: ReadonlyArray<{ name: string; arguments: unknown }>;
  tool_name?: string;
}

/** A tool definition as the format needs it. */
export interface FormatTool {
  name: string;
  description: string;
  parameters: unknown;
}

/**
 * JSON as Python's `json.dumps(ensure_ascii=False)` and @huggingface/jinja's `tojson` write it:
 * `", "` between items and `": "` after keys.
 */
export function formatJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    const s = JSON.stringify(value);
    // undefined and functions have no JSON form; validation rejects them before this point.
    return s === undefined ? 'null' : s;
  }
  if (Array.isArray(value)) return `[${value.map(formatJson).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}: ${formatJson(v)}`).join(', ')}}`;
}

/** The text of a tool call as the format writes it: `{"name": ..., "arguments": ...}`. */
export function callJson(name: string, args: unknown): string {
  return formatJson({ name, arguments: args });
}

/** Ids of `<|bos|>`, the start of every sequence. */
export function encodeBos(tok: Encoder): number[] {
  return [tok.controlId('<|bos|>')];
}

function paramType(schema: unknown): string {
  const t = schema !== null && typeof schema === 'object' ? (schema as { type?: unknown }).type : undefined;
  if (typeof t === 'string') return t;
  if (Array.isArray(t)) return t.map(String).join('|');
  return 'any';
}

/**
 * A tool as one compact line, `name(arg: type, optional?: type): description`: full JSON schemas
 * cost ~80 tokens a tool, and the line keeps what the proxy needs, including the description
 * where tool poisoning hides its instructions.
 */
export function toolDefText(tool: FormatTool): string {
  const p = (tool.parameters ?? {}) as { properties?: Record<string, unknown>; required?: unknown };
  const required = Array.isArray(p.required) ? (p.required as unknown[]) : [];
  const args = Object.entries(p.properties ?? {})
    .map(([k, v]) => `${k}${required.includes(k) ? '' : '?'}: ${paramType(v)}`)
    .join(', ');
  return `${tool.name}(${args}): ${tool.description}`;
}

/** Ids of one tool definition block: `<|tool_def|>name(args): description<|end|>`. */
export function encodeToolDef(tok: Encoder, tool: FormatTool): number[] {
  return [tok.controlId('<|tool_def|>'), ...tok.encodeText(toolDefText(tool)), tok.controlId('<|end|>')];
}

/** Ids of one message. */
export function encodeMessage(tok: Encoder, m: FormatMessage): number[] {
  const end = tok.controlId('<|end|>');
  switch (m.role) {
    case 'system':
    case 'user':
      return [tok.controlId(`<|${m.role}|>`), ...tok.encodeText(m.content), end];
    case 'assistant': {
      const ids = [tok.controlId('<|assistant|>'), ...tok.encodeText(m.content)];
      for (const c of m.tool_calls ?? []) {
        ids.push(tok.controlId('<|call|>'));
        // A loop, not push(...ids): a long argument string has more ids than a call can take arguments (RangeError).
        for (const id of tok.encodeText(callJson(c.name, c.arguments))) ids.push(id);
      }
      ids.push(end);
      return ids;
    }
    case 'tool':
      return [
        tok.controlId('<|tool|>'),
        ...tok.encodeText(m.tool_name ?? ''),
        tok.controlId('<|result|>'),
        ...tok.encodeText(m.content),
        end,
      ];
  }
}

/** The scored action: the prompt ids that open the agent's turn, and the action's own ids. */
export interface EncodedAction {
  /** Ids between the context and the action (`<|assistant|><|call|>`, or `<|assistant|>` for raw text). */
  prefix: number[];
  /** The scored ids. */
  ids: number[];
  /** The action text the ids encode. */
  text: string;
}

/** Encodes a proposed call as the format's tool-call turn (what the proxy was trained on). */
export function encodeActionCall(tok: Encoder, name: string, args: unknown): EncodedAction {
  const text = callJson(name, args);
  return { prefix: [tok.controlId('<|assistant|>'), tok.controlId('<|call|>')], ids: tok.encodeText(text), text };
}

/** Encodes the agent's raw text verbatim as the opening of its turn (the reference's behaviour). */
export function encodeActionRaw(tok: Encoder, rawText: string): EncodedAction {
  return { prefix: [tok.controlId('<|assistant|>')], ids: tok.encodeText(rawText), text: rawText };
}
