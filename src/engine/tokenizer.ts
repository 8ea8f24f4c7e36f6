/**
 * The one place that touches @huggingface/transformers: the proxy's tokenizer and chat template.
 *
 * Untrusted text is encoded by a second tokenizer instance built from the same tokenizer.json with
 * its added tokens removed, so no text, whatever it contains, can become a control token:
 * transformers.js always splits added tokens out of the text it encodes (there is no
 * `split_special_tokens` option), which would turn a tool result's literal `<|user|>` into the
 * role marker itself.
 */
import { PreTrainedTokenizer } from '@huggingface/transformers';
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
  /** Renders messages with the model's own chat template (transformers.js + @huggingface/jinja). */
  renderChatTemplate(messages: TemplateMessage[], tools?: unknown[], addGenerationPrompt?: boolean): string;
  /** Encodes a whole rendered string the way transformers.js does, control tokens included. */
  encodeRendered(text: string): number[];
  /** Decodes ids to text, control tokens included. */
  decode(ids: number[]): string;
  readonly vocabSize: number;
  /** The text of every added (control/special) token, e.g. `<|user|>`. */
  readonly controlTokens: readonly string[];
  /** Whether tokenizer_config.json has a chat template. */
  readonly hasChatTemplate: boolean;
}

/** Builds the proxy tokenizer from parsed tokenizer.json and tokenizer_config.json. */
export function createProxyTokenizer(files: TokenizerFiles): ProxyTokenizer {
  const full = new PreTrainedTokenizer(files.tokenizerJson, files.tokenizerConfig);
  const plain = new PreTrainedTokenizer({ ...files.tokenizerJson, added_tokens: [] }, files.tokenizerConfig);
  const vocab = full.get_vocab();
  const addedTokens = (files.tokenizerJson['added_tokens'] as Array<{ id: number; content: string }> | undefined) ?? [];
  const controlIds = new Set(addedTokens.map((t) => t.id));
  const byteLengths = new Map<number, number>();
  for (const [token, id] of vocab) byteLengths.set(id, controlIds.has(id) ? 0 : [...token].length);
  return {
    encodeText: (text) => (text === '' ? [] : plain.encode(text, { add_special_tokens: false })),
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
    renderChatTemplate: (messages, tools, addGenerationPrompt = false) =>
      full.apply_chat_template(messages as never, {
        tokenize: false,
        add_generation_prompt: addGenerationPrompt,
        ...(tools ? { tools: tools as never } : {}),
      }) as string,
    encodeRendered: (text) => full.encode(text, { add_special_tokens: false }),
    decode: (ids) => full.decode(ids, { skip_special_tokens: false }),
    vocabSize: vocab.size,
    controlTokens: addedTokens.map((t) => t.content),
    hasChatTemplate: typeof files.tokenizerConfig['chat_template'] === 'string' || Array.isArray(files.tokenizerConfig['chat_template']),
  };
}
