/**
 * Tool-aware renderings shipped for model families whose own chat template cannot write a tool-using
 * conversation (Gemma 3 raises on a tool turn, SmolLM2's and Phi-3.5's templates have no tool branch,
 * Llama 3's raise on parallel calls or drop calls): each writes tool definitions, calls and results as
 * text inside the family's own turn format and control tokens, the way the family's function-calling
 * documentation writes them where it has one. They are Jinja templates, rendered exactly as a model's
 * own template is (template-format.ts), over the same message shape: `tool_calls` items carry `name` and
 * `arguments`, tool messages `tool_name`, tools are `{type: 'function', function: {name, description, parameters}}`.
 */

/** The name of a shipped rendering, as the verdict reports it. */
export type FamilyRendering = 'chatml-tools' | 'gemma3-tools' | 'llama3-tools' | 'phi3-tools';

/** A call as the shipped renderings write it: `{"name": ..., "arguments": ...}` (Hermes, Qwen, Gemma's docs). */
const CALL_JSON = `'{"name": ' + (c.name | tojson) + ', "arguments": ' + (c.arguments | tojson) + '}'`;

/** Each call of an assistant message, after its text, wrapped by `open` and `close`. */
const calls = (open: string, close: string, json = CALL_JSON) =>
  `{%- if message.tool_calls %}{%- for c in message.tool_calls %}{{- ('\\n' if (message.content or not loop.first) else '') + '${open}' + ${json} + '${close}' }}{%- endfor %}{%- endif %}`;

/** The tool list, one JSON object a line. */
const TOOL_LINES = `{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}`;

/**
 * ChatML (SmolLM2, and any `<|im_start|>` model whose template has no tool branch), in the Hermes / Qwen
 * function-calling layout: tools in `<tools>` in the system turn, calls in `<tool_call>` tags, results
 * in a `tool` turn inside `<tool_response>` tags.
 */
const CHATML_TOOLS = [
  "{%- if messages[0].role == 'system' or tools %}{{- '<|im_start|>system\\n' }}",
  "{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- if tools %}{{- '\\n\\n' }}{%- endif %}{%- endif %}",
  '{%- if tools %}{{- \'# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>\' }}',
  TOOL_LINES,
  '{{- \'\\n</tools>\\n\\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call>\' }}{%- endif %}',
  "{{- '<|im_end|>\\n' }}{%- endif %}",
  '{%- for message in messages %}',
  "{%- if loop.first and message.role == 'system' %}",
  "{%- elif message.role == 'assistant' %}{{- '<|im_start|>assistant\\n' + message.content }}",
  calls('<tool_call>\\n', '\\n</tool_call>'),
  "{{- '<|im_end|>\\n' }}",
  "{%- elif message.role == 'tool' %}{{- '<|im_start|>tool\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}",
  "{%- else %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}",
  '{%- endif %}{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}",
].join('');

/**
 * Gemma 3: user and model turns only, alternating (consecutive user-side messages share a turn), the system
 * text and the tool list opening the first user turn; calls in ```tool_call fences and results in
 * ```tool_output fences, as Google's Gemma function-calling guide writes them.
 */
const GEMMA3_TOOLS = [
  '{{- bos_token }}',
  "{%- set ns = namespace(side='') %}",
  "{%- if tools %}{{- '<start_of_turn>user\\nYou have access to functions. If you decide to invoke any of the function(s), you MUST put it in the format of\\n```tool_call\\n{\"name\": function name, \"arguments\": dictionary of argument name and its value}\\n```\\nYou SHOULD NOT include any other text in the response if you call a function\\n' }}",
  TOOL_LINES,
  "{%- set ns.side = 'user' %}{%- endif %}",
  '{%- for message in messages %}',
  "{%- set side = 'model' if message.role == 'assistant' else 'user' %}",
  "{%- if side == ns.side %}{{- '\\n\\n' }}{%- else %}{%- if ns.side %}{{- '<end_of_turn>\\n' }}{%- endif %}{{- '<start_of_turn>' + side + '\\n' }}{%- set ns.side = side %}{%- endif %}",
  "{%- if message.role == 'tool' %}{{- '```tool_output\\n' + message.content + '\\n```' }}",
  '{%- else %}{{- message.content }}',
  calls('```tool_call\\n', '\\n```'),
  '{%- endif %}{%- endfor %}',
  "{%- if ns.side %}{{- '<end_of_turn>\\n' }}{%- endif %}",
  "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}",
].join('');

/**
 * Llama 3.1 / 3.2 JSON tool calling: `Environment: ipython` and the functions in the system turn, each call
 * as `{"name": ..., "parameters": ...}` in an assistant turn (several, one a line: parallel calls, which the
 * models' own templates refuse), results in `ipython` turns.
 */
const LLAMA3_TOOLS = [
  "{{- bos_token + '<|start_header_id|>system<|end_header_id|>\\n\\n' }}",
  "{%- if tools %}{{- 'Environment: ipython\\n' }}{%- endif %}",
  "{{- 'Cutting Knowledge Date: December 2023\\nToday Date: 26 Jul 2024\\n\\n' }}",
  '{%- if tools %}{{- \'You have access to the following functions. To call a function, please respond with JSON for a function call. Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}. Do not use variables.\\n\' }}',
  TOOL_LINES,
  "{{- '\\n\\n' }}{%- endif %}",
  "{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- endif %}",
  "{{- '<|eot_id|>' }}",
  '{%- for message in messages %}',
  "{%- if loop.first and message.role == 'system' %}",
  "{%- elif message.role == 'assistant' %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' + message.content }}",
  calls('', '', `'{"name": ' + (c.name | tojson) + ', "parameters": ' + (c.arguments | tojson) + '}'`),
  "{{- '<|eot_id|>' }}",
  "{%- elif message.role == 'tool' %}{{- '<|start_header_id|>ipython<|end_header_id|>\\n\\n' + message.content + '<|eot_id|>' }}",
  "{%- else %}{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\\n\\n' + message.content + '<|eot_id|>' }}",
  '{%- endif %}{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}",
].join('');

/**
 * Phi-3 / Phi-3.5 (no tool format of their own): the system turn carries the tool list, calls are written
 * in `<tool_call>` tags inside the assistant turn, results come back in a user turn inside `<tool_response>` tags.
 */
const PHI3_TOOLS = [
  "{%- if messages[0].role == 'system' or tools %}{{- '<|system|>\\n' }}",
  "{%- if messages[0].role == 'system' %}{{- messages[0].content }}{%- if tools %}{{- '\\n\\n' }}{%- endif %}{%- endif %}",
  '{%- if tools %}{{- \'You may call one or more of the following functions. For each call, answer with {"name": <function-name>, "arguments": <args-json-object>} within <tool_call></tool_call> tags.\\n<tools>\' }}',
  TOOL_LINES,
  "{{- '\\n</tools>' }}{%- endif %}",
  "{{- '<|end|>\\n' }}{%- endif %}",
  '{%- for message in messages %}',
  "{%- if loop.first and message.role == 'system' %}",
  "{%- elif message.role == 'assistant' %}{{- '<|assistant|>\\n' + message.content }}",
  calls('<tool_call>\\n', '\\n</tool_call>'),
  "{{- '<|end|>\\n' }}",
  "{%- elif message.role == 'tool' %}{{- '<|user|>\\n<tool_response>\\n' + message.content + '\\n</tool_response><|end|>\\n' }}",
  "{%- else %}{{- '<|' + message.role + '|>\\n' + message.content + '<|end|>\\n' }}",
  '{%- endif %}{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|assistant|>\\n' }}{%- endif %}",
].join('');

/** Each shipped rendering: its template and the control tokens that mark a tokenizer of its family. */
export const FAMILY_RENDERINGS: ReadonlyArray<{ name: FamilyRendering; controls: readonly string[]; template: string }> = [
  { name: 'gemma3-tools', controls: ['<start_of_turn>', '<end_of_turn>'], template: GEMMA3_TOOLS },
  { name: 'llama3-tools', controls: ['<|start_header_id|>', '<|end_header_id|>', '<|eot_id|>'], template: LLAMA3_TOOLS },
  { name: 'phi3-tools', controls: ['<|user|>', '<|assistant|>', '<|end|>'], template: PHI3_TOOLS },
  { name: 'chatml-tools', controls: ['<|im_start|>', '<|im_end|>'], template: CHATML_TOOLS },
];

/**
 * The shipped rendering of the family whose control tokens the tokenizer has, or null; where several
 * families' tokens are there, the one whose tokens the model's own chat template writes.
 */
export function familyOf(controlTokens: readonly string[], templateText = ''): (typeof FAMILY_RENDERINGS)[number] | null {
  const have = new Set(controlTokens);
  const candidates = FAMILY_RENDERINGS.filter((f) => f.controls.every((c) => have.has(c)));
  return candidates.find((f) => f.controls.every((c) => templateText.includes(c))) ?? candidates[0] ?? null;
}
