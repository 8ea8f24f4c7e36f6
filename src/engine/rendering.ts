/**
 * How guard calls are rendered for a proxy: EdgeArmor's format for its own tokenizer, the model's chat template
 * when it writes a tool-using conversation whole, a shipped rendering in the model family's turn format when it
 * does not, or the caller's `chatTemplate`.
 */
import { InvalidOptionsError, ModelLoadError } from '../core/errors.js';
import { buildContext } from '../core/context.js';
import { resolveOptions } from '../core/options.js';
import type { GuardInput } from '../core/types.js';
import { familyOf, type FamilyRendering } from './family-templates.js';
import { tokenizerKey, type ModelFiles } from './model-files.js';
import { probeTemplate } from './template-format.js';
import { sharedProxyTokenizer, type ProxyTokenizer } from './tokenizer.js';

/** How guard calls are rendered for a model: EdgeArmor's chat format, or the model's own chat template. */
export type ChatFormat = 'edgearmor' | 'template';

/** The rendering guard calls get: EdgeArmor's format, the model's own template, the caller's, or a shipped one in the model family's turn format. */
export type Rendering = 'edgearmor' | 'model-template' | 'custom-template' | FamilyRendering;

const EDGEARMOR_CONTROLS = ['<|bos|>', '<|system|>', '<|user|>', '<|assistant|>', '<|tool|>', '<|result|>', '<|call|>', '<|tool_def|>', '<|end|>'];

/** EdgeArmor's format when the tokenizer has its control tokens, else the model's chat template. */
export function chatFormatOf(tokenizer: Pick<ProxyTokenizer, 'controlTokens' | 'hasChatTemplate'>): ChatFormat {
  if (EDGEARMOR_CONTROLS.every((c) => tokenizer.controlTokens.includes(c))) return 'edgearmor';
  if (tokenizer.hasChatTemplate || familyOf(tokenizer.controlTokens) !== null) return 'template';
  throw new ModelLoadError("the proxy's tokenizer has neither EdgeArmor's control tokens nor a chat_template in tokenizer_config.json, so guard calls cannot be rendered for it", {});
}

/**
 * A tool-using conversation every rendering must write whole: a system turn, an assistant turn with text and two
 * parallel calls, both results, an assistant turn with text only, three tools, then the proposed call.
 */
const PROBE_INPUT: GuardInput = {
  messages: [
    { role: 'system', content: 'Probe system text alpha.' },
    { role: 'user', content: 'Probe user request bravo.' },
    {
      role: 'assistant',
      content: 'Probe assistant text charlie.',
      tool_calls: [
        { name: 'probe_lookup', arguments: { query: 'delta' } },
        { name: 'probe_fetch', arguments: { id: 'echo' } },
      ],
    },
    { role: 'tool', tool_name: 'probe_lookup', content: 'Probe result foxtrot.' },
    { role: 'tool', tool_name: 'probe_fetch', content: 'Probe result golf.' },
    { role: 'assistant', content: 'Probe assistant text hotel.' },
  ],
  action: { name: 'probe_send', arguments: { to: 'india', amount: 3 } },
  tools: [
    { name: 'probe_lookup', description: 'Looks up juliet.', parameters: { type: 'object', properties: { query: { type: 'string' } } } },
    { name: 'probe_fetch', description: 'Fetches kilo.', parameters: { type: 'object', properties: { id: { type: 'string' } } } },
    { name: 'probe_send', description: 'Sends lima.', parameters: { type: 'object', properties: { to: { type: 'string' }, amount: { type: 'number' } } } },
  ],
};

/** Why the tokenizer's chat template cannot render tool-using conversations whole, or null when it can. */
export function templateProblem(tokenizer: ProxyTokenizer, rendering: string): string | null {
  try {
    probeTemplate(tokenizer, buildContext(PROBE_INPUT, resolveOptions()), rendering);
    return null;
  } catch (e) {
    return (e as Error).message;
  }
}

/**
 * The rendering for a tokenizer without `chatTemplate`: EdgeArmor's format for its control tokens; the model's
 * own template when it writes a probe tool conversation whole; else the shipped rendering of the family whose
 * control tokens the tokenizer has. A template no family rendering replaces stays, and each check it cannot
 * render whole is refused by the render check.
 */
export function renderingFor(own: ProxyTokenizer): { tokenizer: ProxyTokenizer; format: ChatFormat; rendering: Rendering } {
  const format = chatFormatOf(own);
  if (format === 'edgearmor') return { tokenizer: own, format, rendering: 'edgearmor' };
  if (own.hasChatTemplate && templateProblem(own, 'model-template') === null) return { tokenizer: own, format, rendering: 'model-template' };
  const family = familyOf(own.controlTokens, own.chatTemplateText);
  if (family === null) return { tokenizer: own, format, rendering: 'model-template' };
  const tokenizer = own.withChatTemplate(family.template);
  const problem = templateProblem(tokenizer, family.name);
  if (problem !== null) throw new ModelLoadError(`the shipped rendering "${family.name}" cannot render a tool conversation with this tokenizer: ${problem}`, { rendering: family.name });
  return { tokenizer, format, rendering: family.name };
}

/**
 * The proxy's tokenizer and how guard calls are rendered for it: with `chatTemplate` in place of the model's
 * template when given (a template that cannot render a one-message conversation is refused), else
 * {@link renderingFor}'s choice.
 */
export function proxyTokenizerFor(files: Pick<ModelFiles, 'tokenizerJson' | 'tokenizerConfig' | 'manifest'>, chatTemplate?: string): { tokenizer: ProxyTokenizer; format: ChatFormat; rendering: Rendering } {
  if (chatTemplate !== undefined && (typeof chatTemplate !== 'string' || chatTemplate.trim() === '')) {
    throw new InvalidOptionsError(`Invalid option chatTemplate: received ${JSON.stringify(chatTemplate)}; allowed: a Jinja chat template string.`, { option: 'chatTemplate' });
  }
  const own = sharedProxyTokenizer(files, tokenizerKey(files.manifest));
  if (chatTemplate === undefined) return renderingFor(own);
  const tokenizer = own.withChatTemplate(chatTemplate);
  try {
    tokenizer.renderChatTemplate([{ role: 'user', content: 'Hello.' }], undefined, true);
  } catch (e) {
    throw new InvalidOptionsError(`Invalid option chatTemplate: it cannot render a one-message conversation: ${(e as Error).message}`, { option: 'chatTemplate' });
  }
  return { tokenizer, format: 'template', rendering: 'custom-template' };
}
