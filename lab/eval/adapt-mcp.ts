/**
 * `edgearmor adapt` on an MCP client's attack-free traffic (docs/adapt.md, "MCP clients"): the traffic is
 * `lab/eval/mcp_sets.py --traffic N`'s conversations of one half's clients, which share no BFCL request and
 * no request text with that half's evaluation set. The held-out checks are fixed (120 for the 2026-11-27 run,
 * made before adapt measured the time a check takes; it would now plant 90 in 45 minutes at ~3 s a check), and
 * the traffic, generated attack-free, is not screened.
 *
 *   npx tsx lab/eval/adapt-mcp.ts TRAFFIC.jsonl OUT [MINUTES=45] [HOLDOUT_CHECKS=120]
 */
import { writeFileSync } from 'node:fs';
import { adapt } from '../../src/adapt/adapt.js';

const [traffic, out, minutes = '45', holdout = '120'] = process.argv.slice(2);
if (!traffic || !out) throw new Error('usage: npx tsx lab/eval/adapt-mcp.ts TRAFFIC.jsonl OUT [MINUTES] [HOLDOUT_CHECKS]');
let last = 0;
const report = await adapt({
  traffic,
  out,
  minutes: Number(minutes),
  screen: 'off',
  keepWork: true,
  training: { holdoutCases: Number(holdout) },
  onProgress: (e) => {
    if (Date.now() - last < 30_000) return;
    last = Date.now();
    process.stderr.write(`${JSON.stringify(e)}\n`);
  },
});
writeFileSync(`${out}.report.json`, `${JSON.stringify(report, null, 1)}\n`);
process.stdout.write(`${JSON.stringify(report)}\n`);
