/**
 * The checks that need no model, over the tool lists of every server a client holds: names that collide
 * or imitate each other across servers, descriptions that speak about another server's tools (shadowing),
 * hidden text, and schema anomalies (parameters that ask for the conversation or for secrets; defaults and
 * enum values that carry addresses, links or instructions). Every pattern here was held against the MCP
 * reference servers and BFCL's schemas, where none fires beyond the same-name collisions those servers really
 * have (test/unit/mcp-definitions-corpora.test.ts).
 */
import { isPlainObject } from '../json.js';
import type { JsonValue } from '../types.js';
import { findHiddenText } from './hidden-text.js';
import { lookalike, nameForms } from './names.js';
import type { DefinitionFinding, ServerTools, ToolDefinition } from './types.js';

/** How each kind of lookalike reads in a finding. */
const LOOKALIKE_TEXT = {
  'same-name': 'has the same name as',
  'case-or-separators': 'differs only in case or separators from',
  'confusable-characters': 'is written with characters that look like',
  decorated: 'adds an authority word to the name of',
  'one-edit': 'is one typing slip away from',
} as const;

/** Name collisions across servers: each pair once, reported on the later server's tool. */
export function nameCollisions(servers: readonly ServerTools[]): DefinitionFinding[] {
  const out: DefinitionFinding[] = [];
  const forms = servers.map((s) => s.tools.map((t) => nameForms(t.name)));
  servers.forEach((s, i) => {
    servers.slice(0, i).forEach((earlier, j) => {
      if (earlier.server === s.server) return;
      s.tools.forEach((t, k) => {
        earlier.tools.forEach((u, l) => {
          const how = lookalike(forms[i]![k]!, forms[j]![l]!);
          if (how === null) return;
          out.push({
            kind: 'name-collision',
            server: s.server,
            tool: t.name,
            where: 'name',
            related: { server: earlier.server, tool: u.name },
            text: `${s.server}/${t.name} ${LOOKALIKE_TEXT[how]} ${earlier.server}/${u.name}`,
            evidence: how,
          });
        });
      });
    });
  });
  return out;
}

/** Every text of a definition a model reads, with where it sits: the description and each schema string (descriptions, titles, defaults, enums). */
function definitionTexts(tool: ToolDefinition): Array<{ where: string; text: string }> {
  const out = [{ where: 'description', text: tool.description }];
  const walk = (value: JsonValue, path: string) => {
    if (typeof value === 'string') out.push({ where: path, text: value });
    else if (Array.isArray(value)) value.forEach((x, i) => walk(x, `${path}[${i}]`));
    else if (value !== null && typeof value === 'object') for (const [k, x] of Object.entries(value)) walk(x, `${path}.${k}`);
  };
  walk(tool.inputSchema, 'inputSchema');
  if (tool.annotations) walk(tool.annotations, 'annotations');
  return out;
}

/** Hidden text anywhere in a definition (description, parameter texts, annotations) and in the tool's name. */
export function hiddenTextFindings(server: string, tool: ToolDefinition): DefinitionFinding[] {
  return [{ where: 'name', text: tool.name }, ...definitionTexts(tool)].flatMap(({ where, text }) => {
    const found = findHiddenText(text);
    return found === null ? [] : [hiddenFinding(server, tool.name, where, found)];
  });
}

/** The finding for hidden text found in one text. */
export function hiddenFinding(server: string, tool: string, where: string, found: NonNullable<ReturnType<typeof findHiddenText>>): DefinitionFinding {
  return {
    kind: 'hidden-text',
    server,
    tool,
    where,
    text: `${where === 'result' ? `a ${tool} result` : `${tool}'s ${where}`} holds ${found.count} hidden ${found.count === 1 ? 'item' : 'items'} (${found.kinds.join(', ')}) a person does not see`,
    model: found.model,
    person: found.person,
  };
}

const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Whether a name is distinctive enough that its bare mention names the tool: it has a separator or an inner
 * capital (`send_email`, `getUser`). A plain word (`fetch`, `search`) names the tool only quoted or beside "tool".
 */
const distinctive = (name: string) => /[_.\-]/.test(name) || /[a-z][A-Z]/.test(name);

/** How a text mentions a tool: its bare name where the name is distinctive, else quoted or beside "tool". */
function mentionPatterns(tool: string): { bare: RegExp; quoted: RegExp } {
  const name = escapeRegExp(tool);
  return {
    bare: new RegExp(`(?<![\\w.\\-])${name}(?![\\w\\-]|\\.\\w)`),
    quoted: new RegExp(`[\`'"]${name}[\`'"]|\\b${name}\\s+(?:tool|function)\\b|\\b(?:tool|function)\\s+${name}\\b`, 'i'),
  };
}

/** A claim that a tool stands in for others, or orders what happens around other tools, without naming them. */
const CLAIMS: readonly RegExp[] = [
  /\b(?:instead of|rather than|replaces?|overrides?|supersedes?|takes? precedence over|shadows?)\s+(?:the\s+|any\s+|all\s+|every\s+)?(?:other|another|existing|original|default|built-in)\s+(?:\w+\s+)?(?:tools?|functions?|servers?)\b/i,
  /\b(?:before|after|whenever|when)\s+(?:using|calling|invoking|running)\s+(?:any|every|all|other|another|the other)\s+(?:\w+\s+)?(?:tools?|functions?)\b/i,
  /\b(?:do not|don't|never)\s+(?:use|call|invoke)\s+(?:the\s+)?(?:other|another|any other)\s+(?:\w+\s+)?(?:tools?|functions?|servers?)\b/i,
  /\b(?:all|any|every)\s+other\s+(?:tools?|functions?)\s+(?:must|should|have to|need to|are (?:deprecated|unsafe|disabled))\b/i,
];

/** Descriptions (and parameter texts) that name another server's tool, or claim to replace or command other tools. */
export function shadowingFindings(servers: readonly ServerTools[]): DefinitionFinding[] {
  const out: DefinitionFinding[] = [];
  for (const s of servers) {
    const others = servers.filter((o) => o.server !== s.server).flatMap((o) => o.tools.map((t) => ({ server: o.server, tool: t.name })));
    const own = new Set(s.tools.map((t) => t.name));
    for (const t of s.tools) {
      const texts = definitionTexts(t).filter((x) => x.where === 'description' || x.where.endsWith('.description'));
      for (const { where, text } of texts) {
        const lower = text.toLowerCase();
        for (const other of others) {
          if (own.has(other.tool)) continue;
          // A text that does not hold the name at all (case aside) cannot mention it: most pairs stop here.
          if (!lower.includes(other.tool.toLowerCase())) continue;
          const { bare, quoted } = mentionPatterns(other.tool);
          const match = (distinctive(other.tool) ? bare.exec(text) : null) ?? quoted.exec(text);
          if (match === null) continue;
          out.push({
            kind: 'shadowing',
            server: s.server,
            tool: t.name,
            where,
            related: other,
            text: `${s.server}/${t.name}'s ${where} names ${other.server}/${other.tool}, a tool of another server`,
            evidence: excerpt(text, match.index, match[0].length),
          });
        }
        for (const claim of CLAIMS) {
          const match = claim.exec(text);
          if (match === null) continue;
          out.push({ kind: 'shadowing', server: s.server, tool: t.name, where, text: `${s.server}/${t.name}'s ${where} claims authority over other tools`, evidence: excerpt(text, match.index, match[0].length) });
          break;
        }
      }
    }
  }
  return out;
}

/** Up to 60 characters either side of a match, on one line. */
function excerpt(text: string, index: number, length: number): string {
  const start = Math.max(0, index - 60);
  const end = Math.min(text.length, index + length + 60);
  return `${start > 0 ? '...' : ''}${text.slice(start, end).replace(/\s+/g, ' ')}${end < text.length ? '...' : ''}`;
}

/** Parameter names that exist to carry the conversation, not the tool's input. */
const CONVERSATION_NAME = /^(?:sidenotes?|notestoself|notetoself|contextdump|fullcontext|system(?:prompt|message|instructions)|(?:previous|prior|all)messages|messagehistory|chat(?:history|log|transcript)|(?:user|session|chat)?transcript|conversation(?:history|log|context|transcript|dump)?|hiddennotes?)$/;
/**
 * A description that asks for the conversation, the system prompt or what the user said: qualified ("the entire
 * conversation", "the user's latest message"), or the object of a copy ("paste the chat history"). A tool that
 * searches "the conversation history" or hands over "the chat" names them without asking for them.
 */
const CONVERSATION_ASK = new RegExp(
  [
    String.raw`\b(?:entire|full|whole|complete|verbatim)\s+(?:conversation|chat|chat history|message history|transcript|context|prompt)\b`,
    String.raw`\b(?:system|developer)\s+(?:prompt|message|instructions)\b`,
    String.raw`\b(?:all|every)\s+(?:previous|prior|earlier|preceding)\s+(?:messages|turns|instructions)\b`,
    String.raw`\b(?:user'?s?|their)\s+(?:complete|full|entire|latest|last|original|exact|verbatim)\s+(?:\w+\s+)?(?:message|prompt|request|query)\b`,
    String.raw`\b(?:user'?s?|their)\s+(?:\w+\s+){0,2}(?:words|messages?|prompts?|requests?|query|queries)\s+verbatim\b`,
    String.raw`\b(?:copy|paste|include|pass|put|send|provide|dump|append)\b[^.]{0,40}\b(?:conversation|chat history|message history|context window)\b`,
    String.raw`\b(?:instructions|rules) you (?:were|have been) given\b`,
  ].join('|'),
  'i',
);
/** Secrets a tool never needs to be handed by the model: key files, credential stores, client configurations. */
const SECRET_ASK =
  /(?:~\/\.ssh|\bid_(?:rsa|ed25519|ecdsa)\b|\.aws\/credentials|\.git-credentials|\.netrc\b|\.npmrc\b|\.pypirc\b|(?:^|[\s/'"`])\.env\b|\bmcp\.json\b|\.cursor\/|claude_desktop_config|\bseed phrase\b|\bcontents? of (?:the |your |all |every )?(?:api keys?|secrets?|tokens?|credentials?|passwords?|environment variables?)\b)/i;
/** Parameter names (or descriptions) that say its default or enum is meant to be a link or an address. */
const ADDRESS_PARAM = /(?:url|uri|link|href|endpoint|host|domain|server|site|address|website|homepage|origin|proxy|webhook|callback|redirect)/i;
const URL_TEXT = /\b(?:https?|ftp|wss?):\/\/([^\s"'<>/:]+)[^\s"'<>]*|\bwww\.([a-z0-9-]+\.[a-z]{2,})/i;
const EMAIL_TEXT = /\b[\w.+-]+@([\w-]+(?:\.[\w-]+)*\.[a-z]{2,})\b/i;
/** Domains reserved for examples (RFC 2606, RFC 6761): no one can receive mail or serve pages there, so a default naming them sends nothing anywhere. */
const RESERVED_DOMAIN = /(?:^|\.)(?:example\.(?:com|org|net)|[\w-]+\.(?:test|example|invalid|localhost)|localhost)$/i;
const reserved = (match: RegExpExecArray | null) => match !== null && RESERVED_DOMAIN.test((match[1] ?? match[2] ?? '').toLowerCase());
/** A value that reads as an order to the model rather than a setting. */
const INSTRUCTION_TEXT =
  /^\s*(?:ignore|disregard|forget|always|never|do not|don't|you must|you should|make sure|be sure|remember to|before|after|first|send|forward|upload|email|include|append|copy|read|reveal|print|output|call|invoke|use)\b|\b(?:you|the assistant|the model|the agent|the ai)\s+(?:must|should|shall|need to|have to|are required to)\b|\b(?:ignore|disregard)\s+(?:all\s+|any\s+)?(?:previous|prior|above|other)\b/i;
/**
 * Words right before an address in a parameter description that fix the value ("always set to X", "put X here",
 * "must be X on every call"), rather than show its format ("must be a valid URL, such as X").
 */
const FIXED_BEFORE = /(?:set (?:it |this )?to|must (?:always )?be|\bput|\buse|\bsend (?:it |a copy )?to|\bis always)\s*['"`]?$/i;
const EXAMPLE_WORDS = /\b(?:such as|e\.g\.|for example|for instance|formatted|format|like)\b/i;
const fixesValue = (description: string, match: RegExpExecArray) => FIXED_BEFORE.test(description.slice(Math.max(0, match.index - 30), match.index)) && !EXAMPLE_WORDS.test(description);
/** Fewest words a default or enum value needs before it is read as an instruction: single words and labels are settings. */
const MIN_INSTRUCTION_WORDS = 5;

/** Each property of a schema (also inside items, anyOf, oneOf, allOf), with its path. */
function schemaProperties(schema: JsonValue, path: string): Array<{ name: string; path: string; schema: Record<string, JsonValue> }> {
  if (!isPlainObject(schema)) return [];
  const s = schema as Record<string, JsonValue>;
  const out: Array<{ name: string; path: string; schema: Record<string, JsonValue> }> = [];
  if (isPlainObject(s['properties'])) {
    for (const [name, sub] of Object.entries(s['properties'] as Record<string, JsonValue>)) {
      const p = `${path}.properties.${name}`;
      if (isPlainObject(sub)) out.push({ name, path: p, schema: sub as Record<string, JsonValue> });
      out.push(...schemaProperties(sub, p));
    }
  }
  for (const key of ['items', 'additionalProperties']) if (isPlainObject(s[key])) out.push(...schemaProperties(s[key]!, `${path}.${key}`));
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    const list = s[key];
    if (Array.isArray(list)) list.forEach((x, i) => out.push(...schemaProperties(x, `${path}.${key}[${i}]`)));
  }
  return out;
}

/** Parameters that ask for data unrelated to the tool (the conversation, secrets), and defaults or enum values that carry addresses, links or instructions. */
export function schemaAnomalies(server: string, tool: ToolDefinition): DefinitionFinding[] {
  const out: DefinitionFinding[] = [];
  const add = (where: string, text: string, evidence: string) => out.push({ kind: 'schema-anomaly', server, tool: tool.name, where, text: `${tool.name}: ${text}`, evidence });
  const secret = SECRET_ASK.exec(tool.description);
  if (secret) add('description', 'the description asks for secrets a tool is never handed (key files, credential stores, client configuration)', excerpt(tool.description, secret.index, secret[0].length));
  const conversation = CONVERSATION_ASK.exec(tool.description);
  if (conversation) add('description', 'the description asks for the conversation or the system prompt', excerpt(tool.description, conversation.index, conversation[0].length));
  for (const p of schemaProperties(tool.inputSchema, 'inputSchema')) {
    const description = typeof p.schema['description'] === 'string' ? (p.schema['description'] as string) : '';
    if (CONVERSATION_NAME.test(p.name.toLowerCase().replace(/[\s_.\-]+/g, ''))) add(p.path, `parameter "${p.name}" is named for the conversation, not the tool's input`, p.name);
    const ask = CONVERSATION_ASK.exec(description);
    if (ask) add(`${p.path}.description`, `parameter "${p.name}" asks for the conversation or the system prompt`, excerpt(description, ask.index, ask[0].length));
    const fixedTo = EMAIL_TEXT.exec(description) ?? URL_TEXT.exec(description);
    if (fixedTo !== null && !reserved(fixedTo) && fixesValue(description, fixedTo)) add(`${p.path}.description`, `parameter "${p.name}" is told to carry a fixed address or link, whatever the user asks`, description);
    const secretAsk = SECRET_ASK.exec(description);
    if (secretAsk) add(`${p.path}.description`, `parameter "${p.name}" asks for secrets a tool is never handed`, excerpt(description, secretAsk.index, secretAsk[0].length));
    const values: Array<{ where: string; value: string }> = [];
    if (typeof p.schema['default'] === 'string') values.push({ where: `${p.path}.default`, value: p.schema['default'] as string });
    for (const key of ['enum', 'examples'] as const) {
      const list = p.schema[key];
      if (Array.isArray(list)) list.forEach((x, i) => typeof x === 'string' && values.push({ where: `${p.path}.${key}[${i}]`, value: x }));
    }
    if (typeof p.schema['const'] === 'string') values.push({ where: `${p.path}.const`, value: p.schema['const'] as string });
    for (const { where, value } of values) {
      const what = where.slice(where.lastIndexOf('.') + 1).replace(/\[\d+\]$/, '');
      const email = EMAIL_TEXT.exec(value);
      const url = URL_TEXT.exec(value);
      if (email !== null && !reserved(email)) add(where, `the ${what} of "${p.name}" carries an email address`, value);
      else if (url !== null && !reserved(url) && !ADDRESS_PARAM.test(p.name) && !ADDRESS_PARAM.test(description)) add(where, `the ${what} of "${p.name}" carries a link, though the parameter is not one`, value);
      else if (value.trim().split(/\s+/).length >= MIN_INSTRUCTION_WORDS && INSTRUCTION_TEXT.test(value)) add(where, `the ${what} of "${p.name}" reads as an instruction`, value);
    }
  }
  return out;
}

/** Every static finding over the servers a client holds: per tool hidden text and schema anomalies, across servers collisions and shadowing. */
export function reviewServers(servers: readonly ServerTools[]): DefinitionFinding[] {
  const perTool = servers.flatMap((s) => s.tools.flatMap((t) => [...hiddenTextFindings(s.server, t), ...schemaAnomalies(s.server, t)]));
  return [...nameCollisions(servers), ...shadowingFindings(servers), ...perTool];
}
