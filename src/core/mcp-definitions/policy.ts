/**
 * Tool-definition findings in a verdict: evidence beside the model's, and a decision of their own only
 * where the `toolDefinitions` options say so. A finding is about a call when it names the called tool,
 * as its tool or as the tool it shadows or imitates (findings carry the server, calls only a name).
 */
import type { ResolvedGuardOptions } from '../options.js';
import type { Verdict } from '../verdict.js';
import type { DefinitionFinding } from './types.js';

/** Kinds the `toolDefinitions.changed` policy decides on: a definition nobody approved in its present form. */
const UNAPPROVED = new Set<DefinitionFinding['kind']>(['definition-changed', 'tool-added']);
/** Kinds the `toolDefinitions.findings` policy decides on. */
const STATIC = new Set<DefinitionFinding['kind']>(['name-collision', 'shadowing', 'hidden-text', 'schema-anomaly']);

/** The findings that name the called tool, as its tool or as the one it relates to. */
export function findingsAbout(findings: readonly DefinitionFinding[], toolName: string): DefinitionFinding[] {
  return findings.filter((f) => f.tool === toolName || f.related?.tool === toolName);
}

/** The findings whose policy blocks a call to `toolName`; empty when none does. */
export function blockingFindings(findings: readonly DefinitionFinding[], toolName: string, policy: ResolvedGuardOptions['toolDefinitions']): DefinitionFinding[] {
  return findingsAbout(findings, toolName).filter((f) => (UNAPPROVED.has(f.kind) && policy.changed === 'block') || (STATIC.has(f.kind) && policy.findings === 'block'));
}

/** The verdict for a call the tool-definition policy blocks before the model runs. */
export function definitionVerdict(findings: readonly DefinitionFinding[], blocking: readonly DefinitionFinding[], toolName: string): Verdict {
  const kinds = [...new Set(blocking.map((f) => f.kind))].join(', ');
  return {
    detected: false,
    decision: 'block',
    reason: 'tool-definition',
    attribution: null,
    flagged: [],
    score: null,
    timings: {},
    message: `The call to "${toolName}" was blocked by the tool-definition policy (${kinds}): ${blocking.map((f) => f.text).join('; ')}.`,
    toolDefinitions: findings.map((f) => (blocking.includes(f) ? { ...f, decides: true } : f)),
  };
}

/** `verdict` with the input's findings beside it (a verdict with none is returned as it is). */
export function withDefinitionFindings(verdict: Verdict, findings: readonly DefinitionFinding[]): Verdict {
  return findings.length === 0 ? verdict : { ...verdict, toolDefinitions: [...findings] };
}
