/**
 * The tool-definition checks without the model (src/core/mcp-definitions) measured on real and attacked tool
 * lists. Two parts:
 *
 * 1. False alarms on real servers: the MCP reference servers (each alone, then every current and removed server
 *    held by one client) and BFCL's schemas (each record's tools, split into servers by the API a multi-turn
 *    tool says it belongs to). test/unit/mcp-definitions-corpora.test.ts keeps these at their measured counts.
 * 2. Findings by kind on the MCP evaluation sets (lab/eval/mcp_sets.py), attacked cases beside their benign
 *    twins. Each tool is put on the server it comes from: a reference server's tools on that server, BFCL's on
 *    one "bfcl" server, and the tool an attack adds (a lookalike or a preferred copy) on an "attacker" server,
 *    in the attacked case and in its twin alike (the twin keeps the tool names, with the attack text removed).
 *
 *   python3 lab/eval/mcp_sets.py --out /tmp/sets
 *   npx tsx lab/eval/mcp-definitions.ts /tmp/sets/mcp-choose.jsonl /tmp/sets/mcp-report.jsonl
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { reviewServers, type DefinitionFinding, type ServerTools, type ToolDefinition } from '../../src/core/mcp-definitions/index.js';

const DATASETS = join(import.meta.dirname, '../../../shared/datasets');

/** The records of a `.jsonl.xz` file (xz from the system: Node's zlib has no xz). */
export function readJsonlXz(path: string): Array<Record<string, unknown>> {
  const text = execFileSync('xz', ['-dc', path], { maxBuffer: 1 << 28 }).toString();
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

const definition = (t: Record<string, unknown>): ToolDefinition => ({
  name: t['name'] as string,
  description: (t['description'] as string | undefined) ?? '',
  inputSchema: ((t['inputSchema'] ?? t['parameters']) as ToolDefinition['inputSchema'] | undefined) ?? {},
  ...(t['annotations'] ? { annotations: t['annotations'] as NonNullable<ToolDefinition['annotations']> } : {}),
});

/** The MCP reference servers, one per server and version (`filesystem@head`, `filesystem@pre_archive`, `github@last_before_removal`). */
export function referenceServers(datasets = DATASETS): ServerTools[] {
  const servers = new Map<string, ToolDefinition[]>();
  for (const r of readJsonlXz(join(datasets, 'mcp_servers/tools.jsonl.xz'))) {
    const key = `${r['server'] as string}@${r['version'] as string}`;
    servers.set(key, [...(servers.get(key) ?? []), definition(r)]);
  }
  return [...servers].map(([server, tools]) => ({ server, tools }));
}

/** Each BFCL record's tools as a client's servers: a multi-turn tool's API ("This tool belongs to the TwitterAPI") is its server, other tools share one. */
export function bfclClients(datasets = DATASETS): Array<{ id: string; servers: ServerTools[] }> {
  return ['single_turn', 'multi_turn_base'].flatMap((file) =>
    readJsonlXz(join(datasets, `bfcl/${file}.jsonl.xz`)).map((r) => {
      const servers = new Map<string, ToolDefinition[]>();
      for (const t of r['tools'] as Array<Record<string, unknown>>) {
        const api = /belongs to the (\w+)/.exec((t['description'] as string | undefined) ?? '')?.[1] ?? 'bfcl';
        servers.set(api, [...(servers.get(api) ?? []), definition(t)]);
      }
      return { id: r['id'] as string, servers: [...servers].map(([server, tools]) => ({ server, tools })) };
    }),
  );
}

/** Findings on the real servers: each reference server alone, all of them (current and removed, no older versions) together, and every BFCL record. */
export function realServerFindings(datasets = DATASETS): { alone: DefinitionFinding[]; together: DefinitionFinding[]; bfcl: DefinitionFinding[]; bfclRecords: number } {
  const reference = referenceServers(datasets);
  const clients = bfclClients(datasets);
  return {
    alone: reference.flatMap((s) => reviewServers([s])),
    together: reviewServers(reference.filter((s) => !s.server.endsWith('@pre_archive'))),
    bfcl: clients.flatMap((c) => reviewServers(c.servers)),
    bfclRecords: clients.length,
  };
}

interface SetCase {
  id: string;
  pair_id: string;
  label: 'injected' | 'benign';
  attack_type: string;
  mcp_servers: string[];
  poisoned_tool?: string | null;
  tools: Array<Record<string, unknown>>;
}

/** Attacks whose tool is a copy added beside the real one (mcp_sets.py's lookalike and preferred names), not a real tool poisoned. */
const ADDED_TOOL_ATTACKS = new Set(['name_collision', 'preference_manipulation']);

/** The servers of one set case, as described at the top of this file. */
function caseServers(c: SetCase, attackerTool: string | null, referenceByName: Map<string, string>): ServerTools[] {
  const servers = new Map<string, ToolDefinition[]>();
  for (const t of c.tools) {
    const name = t['name'] as string;
    const server = name === attackerTool ? 'attacker' : (referenceByName.get(name) ?? 'bfcl');
    servers.set(server, [...(servers.get(server) ?? []), definition(t)]);
  }
  return [...servers].map(([server, tools]) => ({ server, tools }));
}

/** Per attack type and label: cases, cases with any finding, cases with a finding naming the attack's tool, cases with a finding their twin lacks, and cases with each kind. */
function measureSet(path: string, referenceByName: Map<string, string>) {
  const cases = readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as SetCase);
  const attackTool = new Map(cases.filter((c) => c.label === 'injected').map((c) => [c.pair_id, c.poisoned_tool ?? null]));
  const rows = new Map<string, { cases: number; any: number; namingTool: number; beyondTwin: number; kinds: Record<string, number> }>();
  const reviewed = cases.map((c) => {
    const tool = attackTool.get(c.pair_id) ?? null;
    return { c, tool, findings: reviewServers(caseServers(c, ADDED_TOOL_ATTACKS.has(c.attack_type) ? tool : null, referenceByName)) };
  });
  // A finding names its kind, tool and place; the twin has the same tools, so one it lacks comes from the attack's text.
  const keyOf = (f: DefinitionFinding) => `${f.kind} ${f.server} ${f.tool} ${f.where ?? ''} ${f.related?.tool ?? ''}`;
  const keysByCase = new Map(reviewed.map((r) => [r.c.id, new Set(r.findings.map(keyOf))]));
  const twinOf = new Map(reviewed.map((r) => [r.c.id, reviewed.find((x) => x.c.pair_id === r.c.pair_id && x.c.id !== r.c.id)?.c.id ?? null]));
  for (const { c, tool, findings } of reviewed) {
    const key = `${c.attack_type} ${c.label}`;
    const row = rows.get(key) ?? { cases: 0, any: 0, namingTool: 0, beyondTwin: 0, kinds: {} };
    row.cases += 1;
    if (findings.length > 0) row.any += 1;
    const twin = keysByCase.get(twinOf.get(c.id) ?? '') ?? new Set<string>();
    if (findings.some((f) => !twin.has(keyOf(f)))) row.beyondTwin += 1;
    if (tool !== null && findings.some((f) => f.tool === tool || f.related?.tool === tool)) row.namingTool += 1;
    for (const kind of new Set(findings.map((f) => f.kind))) row.kinds[kind] = (row.kinds[kind] ?? 0) + 1;
    rows.set(key, row);
  }
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const real = realServerFindings();
  const count = (fs: DefinitionFinding[]) => JSON.stringify(Object.fromEntries([...new Set(fs.map((f) => f.kind))].map((k) => [k, fs.filter((f) => f.kind === k).length])));
  console.log(`reference servers alone: ${real.alone.length} findings ${count(real.alone)}`);
  console.log(`reference servers together: ${real.together.length} findings ${count(real.together)}`);
  for (const f of real.together) console.log(`  ${f.kind} ${f.text}`);
  console.log(`BFCL records (${real.bfclRecords}): ${real.bfcl.length} findings ${count(real.bfcl)}`);
  const referenceByName = new Map(referenceServers().map((s) => s.tools.map((t) => [t.name, s.server.split('@')[0]!] as const)).flat());
  for (const path of process.argv.slice(2)) {
    console.log(`\n${basename(path)}: attack type, label: cases, with any finding, with one naming the attack's tool, with one the twin lacks; cases by kind`);
    for (const [key, row] of [...measureSet(path, referenceByName)].sort(([a], [b]) => a.localeCompare(b))) {
      console.log(`  ${key.padEnd(32)} ${String(row.cases).padStart(3)} ${String(row.any).padStart(4)} ${String(row.namingTool).padStart(4)} ${String(row.beyondTwin).padStart(4)}  ${JSON.stringify(row.kinds)}`);
    }
  }
}
