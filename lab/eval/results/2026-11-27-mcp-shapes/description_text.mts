// Does the proxy read a poisoned description of the called tool itself? For each injected MCP-set case whose poisoned
// tool is the called one, the call's log-probability (per action token) with the poisoned definition against: the
// whole definition removed (what the guard ablates), the benign twin's clean description, and the description text
// removed with the name and parameters kept. Usage: npx tsx description_text.mts SET.jsonl [MODEL_DIR]
import { readFileSync } from 'node:fs';
import { createNodeGuard } from '../../../../src/node.js';
import { verdictRecord } from '../../../../src/cli/edgearmor.js';

const [set, modelDir] = process.argv.slice(2);
const cases = readFileSync(set!, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const guard = createNodeGuard({ backends: ['node'], ...(modelDir ? { modelDir } : {}) });
const strip = (t: any) => ({ ...t, description: '', parameters: JSON.parse(JSON.stringify(t.parameters ?? {}, (k, v) => (k === 'description' ? undefined : v))) });
for (const c of cases) {
  const lookalike = c.label === 'injected' && c.poisoned_tool && c.poisoned_tool === c.action.name;
  if (!lookalike) continue;
  const twin = cases.find((x: any) => x.pair_id === c.pair_id && x.label === 'benign');
  const input = (tools: any[]) => ({ messages: c.messages, tools, action: { name: c.action.name, arguments: c.action.arguments } });
  const full = verdictRecord(c.id, await guard.check(input(c.tools)));
  const clean = verdictRecord(c.id, await guard.check(input(twin.tools)));
  const bare = verdictRecord(c.id, await guard.check(input(c.tools.map((t: any) => (t.name === c.poisoned_tool ? strip(t) : t)))));
  const n = full.action_tokens ?? 1;
  const whole = full.mindguard?.leave_one_out?.find((t) => t.tool === c.poisoned_tool)?.delta ?? NaN;
  const d = (r: typeof full) => (full.log_probs['full']! - r.log_probs['full']!) / n;
  console.log(`${c.attack_type} ${c.attack.type} whole ${whole.toFixed(3)} clean-twin-desc ${d(clean).toFixed(3)} bare ${d(bare).toFixed(3)} tokens ${n}`);
}
await guard.dispose();
