/**
 * `edgearmor scan FILE... [--pins PINS.json] [--approve] [--json]`: the tool-definition checks without the model,
 * offline, on servers' tool lists saved as files (nothing is uploaded). Each FILE is one server's `tools/list`
 * response, its result `{tools}`, or an array of tools; the server is named by the file's base name, and the
 * checks across servers run across the files. With --pins the definitions are pinned on first use and compared
 * with the pins afterwards. Exit 0 with no finding, 3 with any, 2 with a one-line error on bad input.
 */
import { readFileSync } from 'node:fs';
import { basename, extname } from 'node:path';
import { parseArgs } from 'node:util';
import { fromMcpToolDefinitions } from '../core/mcp.js';
import { createToolPins } from '../core/mcp-definitions/pins.js';
import { reviewServers } from '../core/mcp-definitions/checks.js';
import type { ServerTools } from '../core/mcp-definitions/types.js';
import { filePinStore } from '../engine/pins-node.js';
import { fail } from './flags.js';
import { findingLines } from './report.js';

/** The status when any finding was reported (as `check --exit-code` for a blocked call). */
const EXIT_FINDINGS = 3;

export const SCAN_USAGE = `usage: edgearmor scan <tools.json> [...] [--pins <pins.json>] [--approve] [--json]

Checks MCP servers' tool definitions without the model, offline: names that collide with or imitate another
server's tools, descriptions that speak about another server's tools (shadowing), hidden text (tag characters,
zero-width and bidi controls, HTML comments), and schema anomalies (parameters asking for the conversation or
for secrets; defaults and enum values carrying addresses, links or instructions). Each file is one server's
tools/list response, its result {tools}, or an array of tools {name, description, inputSchema or parameters};
the server is named by the file's base name. Exit status 0: no finding; 3: findings; 2: bad input.

options:
  --pins <pins.json>   pin each server's definitions on first use, and report definitions changed, tools
                       added and tools removed since (the file is created when missing; a corrupt or edited
                       one is refused, never re-trusted)
  --approve            with --pins: after reporting, approve the definitions as listed now
  --json               one finding a line: {kind, server, tool, text, where?, related?, evidence?, model?,
                       person?, diff?}
  -h, --help`;

function readServer(file: string): ServerTools {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    fail(`${file}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    fail(`${file}: not JSON (${(e as Error).message})`);
  }
  return { server: basename(file, extname(file)), tools: fromMcpToolDefinitions(value, file) };
}

/** Runs `edgearmor scan` with its arguments (after the command). */
export async function scanCommand(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { pins: { type: 'string' }, approve: { type: 'boolean' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(`${SCAN_USAGE}\n`);
    return;
  }
  if (positionals.length === 0) fail('scan takes at least one tool-list file; see edgearmor scan --help');
  if (values.approve && values.pins === undefined) fail('--approve needs --pins: there is nothing to approve without a pin file');
  const servers = positionals.map(readServer);
  const names = servers.map((s) => s.server);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice !== undefined) fail(`two files name the server "${twice}" (a server is named by its file's base name); rename one`);
  const pins = values.pins === undefined ? null : createToolPins(filePinStore(values.pins));
  const findings = [...((await pins?.review(servers)) ?? []), ...reviewServers(servers)];
  for (const f of findings) process.stdout.write(values.json ? `${JSON.stringify(f)}\n` : `${findingLines(f).join('\n')}\n`);
  if (values.approve && pins !== null) for (const s of servers) await pins.approve(s.server, s.tools);
  const tools = servers.reduce((n, s) => n + s.tools.length, 0);
  const approved = values.approve ? '; the definitions as listed now are approved' : '';
  process.stderr.write(`edgearmor scan: ${findings.length} ${findings.length === 1 ? 'finding' : 'findings'} in ${tools} ${tools === 1 ? 'tool' : 'tools'} of ${servers.length} ${servers.length === 1 ? 'server' : 'servers'}${approved}\n`);
  if (findings.length > 0) process.exitCode = EXIT_FINDINGS;
}
