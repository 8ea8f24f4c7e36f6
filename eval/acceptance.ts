/**
 * Checks a model on the product's seven acceptance cases (src/eval/acceptance.ts): the README's seed cases,
 * the demo's default pair and the browser extension's two pages, each with the verdict it must get. A
 * candidate that fails one is not shipped, whatever its held-out numbers (model/gpu-trials.md).
 *
 *   npx tsx eval/acceptance.ts [--model <dir>] [--variant q4] [--tau=T] [--user-weight W]   (--tau=-0.1: a negative value needs the =)
 *
 * Prints one line per case and exits 1 when any case fails.
 */
import { parseArgs } from 'node:util';
import { isModelVariant } from '../src/engine/model-files.js';
import { runAcceptance } from '../src/eval/acceptance.js';
import { createNodeGuard } from '../src/node.js';

const { values } = parseArgs({
  options: {
    model: { type: 'string' },
    variant: { type: 'string', default: 'q4' },
    tau: { type: 'string' },
    'user-weight': { type: 'string' },
  },
});
const number = (name: string, raw: string | undefined) => {
  if (raw === undefined) return undefined;
  const x = Number(raw);
  if (!Number.isFinite(x)) throw new Error(`--${name} must be a number; received "${raw}"`);
  return x;
};
if (!isModelVariant(values.variant)) throw new Error(`--variant must be one of q4, fp32, fp16, q4f16; received "${values.variant}"`);
const modelVariant = values.variant;
const tau = number('tau', values.tau);
const userWeight = number('user-weight', values['user-weight']);

const guard = createNodeGuard({
  backends: ['node'],
  ...(values.model ? { modelDir: values.model } : {}),
  modelVariant,
  ...(tau !== undefined ? { tau } : {}),
  ...(userWeight !== undefined ? { userWeight } : {}),
});
try {
  const results = await runAcceptance((input) => guard.check(input));
  for (const r of results) console.log(`${r.passed ? 'ok  ' : 'FAIL'} ${r.id.padEnd(28)} expected ${r.expected}, got ${r.decision} (${r.reason})`);
  const passed = results.filter((r) => r.passed).length;
  console.log(`${passed} of ${results.length} acceptance cases pass (${values.model ?? 'embedded model'}, ${values.variant})`);
  process.exitCode = passed === results.length ? 0 : 1;
} finally {
  await guard.dispose();
}
