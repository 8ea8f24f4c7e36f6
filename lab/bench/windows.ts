/**
 * What windowed attribution costs (issue 32): one MCP-sized check, about 4,000 tokens with 20 tools and
 * three tool results, on the embedded model (1,024-token window) in process, against the same
 * conversation cut to fit one window (five tools, one result). Reports the windows, the passes and the
 * median time of each; the first round warms up.
 *
 * `npx tsx lab/bench/windows.ts [--reps N]` (default 5); `npm run bench` runs it after the guards table.
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { GuardInput } from '../../src/core/types.js';
import { createNodeGuard } from '../../src/node.js';

const MODEL_DIR = fileURLToPath(new URL('../../public/models/edgearmor-proxy', import.meta.url));
const SERVICES = ['billing', 'travel', 'calendar', 'inventory', 'support', 'payroll', 'shipping', 'crm'];

function tool(i: number) {
  const service = SERVICES[i % SERVICES.length]!;
  return {
    name: `${service}_lookup_${i}`,
    description:
      `Looks up one record in the ${service} service by its id and returns every field of it as JSON: the owner, the status, ` +
      `the amounts and dates, the free-text notes and the history of changes. Use it when the user asks about a ${service} ` +
      `record, or before changing one. Records archived more than two years ago are not returned; ask an administrator for them. ` +
      `Rate-limited to 30 calls a minute per user; on a limit error wait and retry once.`,
    parameters: { type: 'object', properties: { id: { type: 'string', description: `the ${service} record id` }, fields: { type: 'array', items: { type: 'string' } } }, required: ['id'] },
  };
}

function result(n: number): string {
  return Array.from({ length: 40 }, (_, i) => `Entry ${n}.${i}: invoice INV-${2000 + i} for ${100 + i * 7} EUR was paid on day ${1 + (i % 28)} by account DE02100100100006820${100 + i}.`).join(' ');
}

/** The 4k-token / 20-tool case, or its one-window cut (five tools, one shorter result). */
export function windowsBenchCase(small = false): GuardInput {
  const tools = [...Array.from({ length: small ? 4 : 19 }, (_, i) => tool(i)), { name: 'send_money', description: 'Sends money to an IBAN.', parameters: { type: 'object', properties: { iban: { type: 'string' }, amount: { type: 'number' } } } }];
  const results = small ? [result(0).slice(0, 600)] : [result(0), result(1), result(2)];
  return {
    messages: [
      { role: 'system', content: 'You are a bookkeeping assistant with access to the company tools.' },
      { role: 'user', content: 'Pay invoice INV-2003 of 121 EUR to the supplier.' },
      { role: 'assistant', content: '', tool_calls: [{ name: 'billing_lookup_0', arguments: { id: 'INV-2003' } }] },
      ...results.map((content) => ({ role: 'tool' as const, tool_name: 'billing_lookup_0', content })),
    ],
    tools,
    action: { name: 'send_money', arguments: { iban: 'DE02100100100006820103', amount: 121 } },
  };
}

export interface WindowsBenchRow {
  case: string;
  windows: number;
  passes: number;
  median_ms: number;
}

export async function benchWindows(reps: number): Promise<WindowsBenchRow[]> {
  const guard = createNodeGuard({ modelDir: MODEL_DIR, backend: 'node', timeoutMs: 10 * 60_000 });
  const rows: WindowsBenchRow[] = [];
  try {
    for (const [name, input] of [['4k tokens, 20 tools, 3 results', windowsBenchCase()], ['one window: 5 tools, 1 result', windowsBenchCase(true)]] as const) {
      const first = await guard.check(input);
      if (first.reason !== 'model') throw new Error(`${name}: ${first.message}`);
      const times: number[] = [];
      for (let r = 0; r < reps; r++) {
        const t = performance.now();
        await guard.check(input);
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      const median = times[Math.floor(times.length / 2)]!;
      rows.push({ case: name, windows: first.windows?.count ?? 1, passes: first.windows?.passes ?? first.attribution!.variants.length, median_ms: Math.round(median) });
    }
  } finally {
    await guard.dispose();
  }
  return rows;
}

export function windowsTable(rows: readonly WindowsBenchRow[]): string {
  return ['| case | windows | passes | median ms / check |', '| --- | --- | --- | --- |', ...rows.map((r) => `| ${r.case} | ${r.windows} | ${r.passes} | ${r.median_ms} |`)].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { reps: { type: 'string', default: '5' } } });
  process.stdout.write(`${windowsTable(await benchWindows(Number(values.reps)))}\n`);
}
