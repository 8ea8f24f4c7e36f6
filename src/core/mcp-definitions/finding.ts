/** What the tool-definition checks find: plain JSON, imported by the guard input's types without the rest of the checks. */

/** Every kind of finding, in the order a report lists them. */
export const DEFINITION_FINDING_KINDS = ['definition-changed', 'tool-added', 'tool-removed', 'name-collision', 'shadowing', 'hidden-text', 'schema-anomaly'] as const;

/** What a finding is about. */
export type DefinitionFindingKind = (typeof DEFINITION_FINDING_KINDS)[number];

/** One piece of evidence about tool definitions: plain JSON, so it crosses to a worker and into the `--json` record. */
export interface DefinitionFinding {
  kind: DefinitionFindingKind;
  server: string;
  tool: string;
  /** One sentence saying what was found. */
  text: string;
  /** Where in the definition: `name`, `description`, a schema path such as `inputSchema.properties.note.default`, or `result` (a tool result). */
  where?: string;
  /** The other tool a collision or shadowing finding is about. */
  related?: { server: string; tool: string };
  /** The words that matched (a schema anomaly, a shadowing claim). */
  evidence?: string;
  /** Hidden text: what the model reads, every hidden character spelled out. */
  model?: string;
  /** Hidden text: what a person sees rendered. */
  person?: string;
  /** A changed definition: one line per changed field, `path: before -> after`. */
  diff?: string[];
  /** In a verdict: this finding's policy decided the call (reason 'tool-definition'). */
  decides?: boolean;
}
