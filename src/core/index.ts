/**
 * `edgearmor/core`: what a caller of either guard uses anywhere (browser, worker, Node): the guard's
 * interface and its verdict, input types and adapters, options, explanations, tool-definition checks and
 * the errors. Chosen and listed in docs/api.md (a test holds the two together); the modules behind it
 * are internal and import each other directly.
 */
export type { BackendName, CheckOptions, DefendCallbacks, Guard, GuardProgress, GuardState, GuardStatus } from './guard-api.js';
export type { Decision, DecisionReason, TruncationReport, Verdict, WindowsReport } from './verdict.js';
export type { AttributionResult, FlaggedSpan, SpanAttribution } from './attribution.js';
export type { ToolPoisoningVerdict } from './tool-poisoning.js';
export type { MindGuardVerdict } from './mindguard/types.js';
export type { DefenseAttempt, DefenseResult, SanitizedSpan, SanitizeRequest, Sanitizer } from './defense.js';
export type { FamiliarityCount, FamiliarityJudgement } from './familiarity.js';
export type { ModelCalibration, ModelOptions, ModelOptionsStatus } from './model-options.js';

export type {
  FlatToolInput,
  GuardInput,
  JsonObject,
  JsonPrimitive,
  JsonValue,
  McpToolInput,
  Message,
  MessageToolCall,
  OpenAIFunctionToolInput,
  Role,
  ToolCall,
  ToolInput,
  ToolSpec,
} from './types.js';
export { fromAnthropicMessages, fromAnthropicToolUse, fromOpenAIMessages, fromOpenAIToolCall } from './adapters.js';
export { fromMcpToolDefinitions, fromMcpToolResult, fromMcpToolsCall, fromMcpToolsList, mcpGuardInput, type McpGuardInputParts } from './mcp.js';

export { reviewServers } from './mcp-definitions/checks.js';
export type { DefinitionFinding, DefinitionFindingKind, ServerTools, ToolDefinition } from './mcp-definitions/types.js';
export { createToolPins, memoryPinStore, type PinStore, type ToolPins } from './mcp-definitions/pins.js';

export { DEFAULT_GUARD_OPTIONS, mergeOptions, optionsFromEnv, resolveOptions } from './options.js';
export type {
  ActionTextMode,
  DefenseOptions,
  DetectionRuleName,
  EdgeArmorRuleOptions,
  FailurePolicy,
  GuardOptions,
  ResolvedGuardOptions,
  ToolPoisoningOptions,
  TruncatedSpanPolicy,
  UserRequestMode,
} from './options.js';
export type { MindGuardOptions } from './mindguard/options.js';
export type { BackendPreference, HubSource, ModelManifest, ModelRuntimeOptions, ModelVariant, RemoteProxyOptions, ScoringMode } from './runtime-options.js';

export { explainVerdict, verdictFindings, verdictHeadline, type VerdictFinding } from './explain.js';
export { familiarityLine, judgeFamiliarity } from './familiarity.js';
export { VERDICT_RECORD_SCHEMA_VERSION, verdictRecord, type VerdictRecord } from './verdict-record.js';

export {
  BackendUnavailableError,
  ContextTooLongError,
  deserializeError,
  DeviceLostError,
  DisposedError,
  EdgeArmorError,
  GuardAbortedError,
  GuardTimeoutError,
  InferenceError,
  IntegrityError,
  InternalError,
  InvalidInputError,
  InvalidOptionsError,
  isEdgeArmorError,
  MindGuardError,
  ModelLoadError,
  OutOfMemoryError,
  PinStoreError,
  RemoteProxyError,
  serializeError,
  WorkerCrashedError,
  type ErrorCode,
  type WireError,
} from './errors.js';
export {
  MAX_ACTION_ARGUMENTS_CHARS,
  MAX_FIELD_CHARS,
  MAX_JSON_DEPTH,
  MAX_MESSAGES,
  MAX_NAME_CHARS,
  MAX_SPANS,
  MAX_TOOLS,
  MAX_TOTAL_CHARS,
} from './limits.js';
