/** Public entry of the agent-scenario generator. */
export { generateCases, generateCase, iterateCases, findCase, guardInputOf, cleanFirstCalls, DOMAINS, SCENARIO_PICKS, RESULT_STYLE_NAMES, POISON_STYLE_NAMES, CASE_KINDS } from './generate.js';
export type { ScenarioPick } from './generate.js';
export { splitOf } from './pools.js';
export type { GuardCase, GenerateOptions, Split, CaseKind, Message, ToolCall, ToolSpec, AttackInfo, Driver, JsonValue } from './types.js';
