/**
 * The one place that tokenizes and renders chat templates: @huggingface/tokenizers (the tokenizer
 * transformers.js wraps) and @huggingface/jinja (its template engine), used directly so that loading
 * the guard never imports transformers.js, whose Node build loads onnxruntime-node and sharp's native
 * bindings on import (a host without them crashed before the wasm fallback could run).
 *
 * Untrusted text is encoded by a second tokenizer instance built from the same tokenizer.json with
 * its added tokens removed, so no text, whatever it contains, can become a control token: the
 * tokenizer always splits added tokens out of the text it encodes (there is no `split_special_tokens`
 * option), which would turn a tool result's literal `<|user|>` into the role marker itself.
 */
import { Template } from '@huggingface/jinja';
import { Tokenizer } from '@huggingface/tokenizers';
import { InferenceError, ModelLoadError } from '../core/errors.js';

/** The JSON files a tokenizer is made of, as parsed objects. */
export interface TokenizerFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
}

/** A message in the shape the chat template renders. */
export interface TemplateMessage {
  role: string;
  content: string;
  tool_calls?: Array<{ name: string; arguments: unknown }>;
  tool_name?: string;
}

/** Encodes text fields and looks up control tokens of the proxy's chat format. */
export interface ProxyTokenizer {
  /** Token ids of `text` as plain text: never a control or special token. */
  encodeText(text: string): number[];
  /** The id of a control token such as `<|user|>`; throws if the vocabulary lacks it. */
  controlId(token: string): number;
  /** True for ids of added (special/control) tokens. */
  isControlId(id: number): boolean;
  /** UTF-8 byte length of a token's text (byte-level BPE: one vocabulary character per byte). */
  tokenByteLength(id: number): number;
  /** Renders messages with the model's own chat template (@huggingface/jinja, as transformers.js does). */
  renderChatTemplate(messages: TemplateMessage[], tools?: unknown[], addGenerationPrompt?: boolean): string;
  /** Encodes a whole rendered string the way transformers.js does, control tokens included. */
  encodeRendered(text: string): number[];
  /** Decodes ids to text, control tokens included. */
  decode(ids: number[]): string;
  /** The text of one token decoded alone (memoised: the truncation policy reads every token of a long text). */
  decodeToken(id: number): string;
  readonly vocabSize: number;
  /** The text of every added (control/special) token, e.g. `<|user|>`. */
  readonly controlTokens: readonly string[];
  /** Whether tokenizer_config.json has a chat template. */
  readonly hasChatTemplate: boolean;
  /** The chat template text (every named one joined), or '' without one: which control tokens it writes tells its family. */
  readonly chatTemplateText: string;
  /** The same tokenizer rendering with another chat template (the tokenizers are shared, not rebuilt). */
  withChatTemplate(template: string): ProxyTokenizer;
}

// The special tokens a chat template may name, as transformers.js passes them.
const SPECIAL_TOKEN_ATTRIBUTES = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'] as const;

/** A special token's text from tokenizer_config.json: a string, or an AddedToken object. */
function tokenFromConfig(config: Record<string, unknown>, key: string): string | null {
  const item = config[key];
  if (!item) return null;
  if (typeof item === 'string') return item;
  if (typeof item === 'object' && (item as { __type?: unknown }).__type === 'AddedToken') return String((item as { content: unknown }).content);
  throw new ModelLoadError(`tokenizer_config.json: ${key} is neither a string nor an AddedToken`, { key });
}

/** The chat template to render with: the config's string, or from a list of named ones the tool-use or default one. */
function chatTemplateOf(config: Record<string, unknown>, withTools: boolean): string {
  const template = config['chat_template'];
  if (typeof template === 'string') return template;
  if (Array.isArray(template)) {
    const named = new Map((template as Array<{ name?: unknown; template?: unknown }>).map((t) => [t.name, t.template]));
    const chosen = (withTools && named.has('tool_use') ? named.get('tool_use') : named.get('default')) ?? null;
    if (typeof chosen === 'string') return chosen;
    throw new ModelLoadError(`tokenizer_config.json has several chat templates and no "default" one (it has: ${[...named.keys()].join(', ')})`, {});
  }
  throw new ModelLoadError('tokenizer_config.json has no chat_template to render guard calls with', {});
}

/** Builds the proxy tokenizer from parsed tokenizer.json and tokenizer_config.json. */
export function createProxyTokenizer(files: TokenizerFiles): ProxyTokenizer {
  const full = new Tokenizer(files.tokenizerJson, files.tokenizerConfig);
  const plain = new Tokenizer({ ...files.tokenizerJson, added_tokens: [] }, files.tokenizerConfig);
  const vocab = full.get_vocab();
  // Added tokens that are only whitespace (Gemma's newline, space and tab runs) are text, not controls: a
  // template's own line breaks must not count as control tokens, and no text is ever written around them.
  const addedTokens = ((files.tokenizerJson['added_tokens'] as Array<{ id: number; content: string }> | undefined) ?? []).filter((t) => !/^[\s\u2581]*$/u.test(t.content));
  const controlIds = new Set(addedTokens.map((t) => t.id));
  const byteLengths = new Map<number, number>();
  for (const [token, id] of vocab) byteLengths.set(id, controlIds.has(id) ? 0 : [...token].length);
  const specialTokens = Object.fromEntries(SPECIAL_TOKEN_ATTRIBUTES.flatMap((key) => {
    const token = tokenFromConfig(files.tokenizerConfig, key);
    return token === null ? [] : [[key, token]];
  }));
  const compiled = new Map<string, Template>();
  const decode = (ids: number[]) => full.decode(ids, { skip_special_tokens: false, clean_up_tokenization_spaces: null });
  const tokenTexts = new Map<number, string>();
  const encode = (tokenizer: Tokenizer, text: string) => tokenizer.encode(text, { add_special_tokens: false, return_token_type_ids: false }).ids;
  const withConfig = (config: Record<string, unknown>): ProxyTokenizer => ({
    encodeText: (text) => (text === '' ? [] : encode(plain, text)),
    controlId(token) {
      const id = vocab.get(token);
      if (id === undefined || !controlIds.has(id)) {
        throw new ModelLoadError(`control token ${JSON.stringify(token)} is not in this tokenizer's added tokens; allowed: a tokenizer with EdgeArmor's control tokens, or a chat template`, { token });
      }
      return id;
    },
    isControlId: (id) => controlIds.has(id),
    tokenByteLength(id) {
      const n = byteLengths.get(id);
      if (n === undefined) throw new InferenceError(`token id ${id} is outside the vocabulary (size ${vocab.size})`, { id, vocabSize: vocab.size });
      return n;
    },
    renderChatTemplate(messages, tools, addGenerationPrompt = false) {
      const source = chatTemplateOf(config, tools !== undefined);
      let template = compiled.get(source);
      if (template === undefined) compiled.set(source, (template = new Template(source)));
      return template.render({ messages, add_generation_prompt: addGenerationPrompt, tools: tools ?? null, documents: null, ...specialTokens });
    },
    encodeRendered: (text) => encode(full, text),
    decode: (ids) => (ids.length === 0 ? '' : decode(ids)),
    decodeToken(id) {
      let text = tokenTexts.get(id);
      if (text === undefined) tokenTexts.set(id, (text = decode([id])));
      return text;
    },
    vocabSize: vocab.size,
    controlTokens: addedTokens.map((t) => t.content),
    hasChatTemplate: typeof config['chat_template'] === 'string' || Array.isArray(config['chat_template']),
    chatTemplateText: templateText(config['chat_template']),
    withChatTemplate: (template) => withConfig({ ...config, chat_template: template }),
  });
  return withConfig(files.tokenizerConfig);
}

/** Tokenizers built in this process, by the content of their files, for as long as some engine holds one. */
const built = new Map<string, WeakRef<ProxyTokenizer>>();
const forget = new FinalizationRegistry<string>((key) => {
  if (built.get(key)?.deref() === undefined) built.delete(key);
});

/**
 * {@link createProxyTokenizer}, built once per process for files of the same content while any engine still
 * holds it: a 262k-vocabulary tokenizer takes seconds to build (twice over: the plain-text instance beside the
 * full one), and a host that loads the same model again (a second guard, adaptation's base and
 * candidate, a scoring server beside its clients) would pay that each time. `key` names the files' contents (their
 * pinned hashes); without one the tokenizer is built anew. Sharing is safe: a tokenizer holds no per-call state.
 */
export function sharedProxyTokenizer(files: TokenizerFiles, key: string | null): ProxyTokenizer {
  if (key === null) return createProxyTokenizer(files);
  const held = built.get(key)?.deref();
  if (held !== undefined) return held;
  const tokenizer = createProxyTokenizer(files);
  built.set(key, new WeakRef(tokenizer));
  forget.register(tokenizer, key);
  return tokenizer;
}

/** A chat_template field's text: the string, or every named template's joined. */
function templateText(template: unknown): string {
  if (typeof template === 'string') return template;
  if (Array.isArray(template)) return (template as Array<{ template?: unknown }>).map((t) => (typeof t.template === 'string' ? t.template : '')).join('\n');
  return '';
}
