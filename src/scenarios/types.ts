/** Which slice of the template families a case is drawn from. */
export type Split = 'train' | 'validation' | 'test';

/** The kinds of generated case, see the generator doc for their proportions. */
export type CaseKind =
  | 'benign'
  | 'benign_copy'
  | 'ignored_injection'
  | 'ignored_poisoning'
  | 'tool_result_injection'
  | 'tool_poisoning';

/** A JSON value as it may appear in tool-call arguments. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

/** A tool call made by the agent. */
export interface ToolCall {
  name: string;
  arguments: Record<string, JsonValue>;
}

/** One chat message, in the AgentDojo dev.jsonl shape. */
export interface Message {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string;
  tool_calls?: ToolCall[];
  tool_name?: string;
}

/** An MCP-style tool registration. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: { type: 'object'; properties: Record<string, JsonValue>; required: string[] };
}

/** The attack carried by a case, or null for clean conversations. */
export interface AttackInfo {
  vector: 'tool_result' | 'tool_description';
  type: 'A1' | 'A2';
  style: string;
  goal: string;
}

/** What really drives the proposed action. */
export type Driver =
  | { kind: 'user' }
  | { kind: 'tool_result'; message_index: number }
  | { kind: 'tool_description'; tool: string };

/** One labelled guard case: a conversation and the next tool call the agent proposes. */
export interface GuardCase {
  id: string;
  split: Split;
  domain: string;
  task: string;
  label: 'injected' | 'benign';
  kind: CaseKind;
  attack: AttackInfo | null;
  follows: boolean;
  cot: boolean;
  driver: Driver;
  messages: Message[];
  action: ToolCall & { raw_text: string };
  /** The call the user's request asks for (equal to `action` unless the agent followed an attack): what a defended agent should propose instead. */
  intended_action: ToolCall;
  tools: ToolSpec[];
  injected_in: number[];
  poisoned_tool: string | null;
  /** Ids (`family#index`) of every template and value list entry used, for split-disjointness checks. */
  templates: string[];
  /** Attacker-controlled values (IBANs, emails, URLs, paths) planted in the injected text; empty for clean cases. */
  attacker_values: string[];
}

/** Options for generateCases. */
export interface GenerateOptions {
  split: Split;
  seed: number;
  n: number;
}
