/**
 * A ChatML tokenizer in the style of Qwen2.5's, built from the embedded model's tokenizer: its
 * control tokens keep their ids under ChatML names, and the chat template writes tools and calls
 * the way Qwen's does (tools as JSON in the system turn, calls in <tool_call> tags, results in a
 * user turn). Same ids, so the embedded model can score what it renders.
 */
const RENAMES: Record<string, string> = {
  '<|system|>': '<|im_start|>',
  '<|user|>': '<|im_end|>',
  '<|assistant|>': '<tool_call>',
  '<|tool|>': '</tool_call>',
  '<|result|>': '<tool_response>',
  '<|tool_def|>': '</tool_response>',
  '<|call|>': '<|fim_pad|>',
  '<|end|>': '<|endoftext|>',
};

export const CHATML_TEMPLATE = [
  '{%- if tools %}',
  "{{- '<|im_start|>system\\n' }}{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}",
  "{{- '\\n\\n# Tools\\n\\n<tools>' }}{%- for tool in tools %}{{- '\\n' }}{{- tool | tojson }}{%- endfor %}{{- '\\n</tools><|im_end|>\\n' }}",
  "{%- elif messages[0].role == 'system' %}{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' }}",
  '{%- endif %}',
  '{%- for message in messages %}',
  "{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}",
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}",
  "{%- elif message.role == 'assistant' %}",
  "{{- '<|im_start|>assistant' }}{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}",
  '{%- for tool_call in message.tool_calls %}{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}',
  "{{- '\\n<tool_call>\\n{\"name\": \"' + tool_call.name + '\", \"arguments\": ' }}{{- tool_call.arguments | tojson }}{{- '}\\n</tool_call>' }}",
  "{%- endfor %}{{- '<|im_end|>\\n' }}",
  "{%- elif message.role == 'tool' %}",
  "{{- '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}",
  '{%- endif %}',
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
].join('');

/** The ChatML tokenizer files, from the embedded model's parsed tokenizer.json and tokenizer_config.json. */
export function chatmlTokenizerFiles(
  tokenizerJson: Record<string, unknown>,
  tokenizerConfig: Record<string, unknown>,
): { tokenizerJson: Record<string, unknown>; tokenizerConfig: Record<string, unknown> } {
  const rename = (s: string) => RENAMES[s] ?? s;
  const model = tokenizerJson['model'] as { vocab: Record<string, number> };
  const added = tokenizerJson['added_tokens'] as Array<{ content: string }>;
  return {
    tokenizerJson: {
      ...tokenizerJson,
      added_tokens: added.map((t) => ({ ...t, content: rename(t.content) })),
      model: { ...model, vocab: Object.fromEntries(Object.entries(model.vocab).map(([k, v]) => [rename(k), v])) },
    },
    tokenizerConfig: { ...tokenizerConfig, chat_template: CHATML_TEMPLATE, added_tokens_decoder: undefined },
  };
}

/** A template in the style of Gemma 3's: user and model turns only; any other role raises. */
export const STRICT_TEMPLATE = [
  '{%- for m in messages %}',
  "{%- if m.role not in ['user', 'assistant'] %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{%- endif %}",
  "{{- '<start_of_turn>' + ('model' if m.role == 'assistant' else 'user') + '\\n' + m.content + '<end_of_turn>\\n' }}",
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}",
].join('');

/** What a user gives such a model: the same turns, with the tool list, system text, tool results and tool calls written as turns. */
export const TOOL_TURNS_TEMPLATE = [
  "{%- if tools %}{{- '<start_of_turn>user\\nTools:' }}{%- for t in tools %}{{- '\\n' + (t | tojson) }}{%- endfor %}{{- '<end_of_turn>\\n' }}{%- endif %}",
  '{%- for m in messages %}',
  "{%- if m.role == 'tool' %}{{- '<start_of_turn>user\\nResult of ' + m.tool_name + ':\\n' + m.content + '<end_of_turn>\\n' }}",
  "{%- elif m.role == 'assistant' %}{{- '<start_of_turn>model\\n' + m.content }}",
  "{%- for c in m.tool_calls %}{{- '```tool_call\\n' + ({'name': c.name, 'arguments': c.arguments} | tojson) + '\\n```' }}{%- endfor %}",
  "{{- '<end_of_turn>\\n' }}",
  "{%- else %}{{- '<start_of_turn>user\\n' + m.content + '<end_of_turn>\\n' }}{%- endif %}",
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}",
].join('');
