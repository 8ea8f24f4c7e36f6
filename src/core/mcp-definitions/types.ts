/** The shapes of the tool-definition checks: what they read (servers' tool lists) and what they find. */
import type { JsonObject } from '../types.js';

export { DEFINITION_FINDING_KINDS, type DefinitionFinding, type DefinitionFindingKind } from './finding.js';

/** One tool as a server lists it: what is pinned and checked. */
export interface ToolDefinition {
  name: string;
  description: string;
  inputSchema: JsonObject;
  /** MCP's behaviour hints (readOnlyHint, destructiveHint, ...), when the server gives them. */
  annotations?: JsonObject;
}

/** One server's tools, under the identity the client configured for it. */
export interface ServerTools {
  server: string;
  tools: ToolDefinition[];
}
