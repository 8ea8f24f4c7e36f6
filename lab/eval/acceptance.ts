/**
 * Checks a model on the product's seven acceptance cases (src/eval/acceptance.ts): the README's seed cases,
 * the demo's default pair and the browser extension's two pages, each with the verdict it must get. A
 * candidate that fails one is not shipped, whatever its held-out numbers (lab/model/gpu-trials.md).
 * Each line shows the verdict's score (a span flags above -tau), dU and which evidence flagged the call, so a
 * pass by a hair, or by the tool list's evidence alone, is visible.
 *
 *   npx tsx lab/eval/acceptance.ts [--model <dir>] [--variant q4] [--tau -0.1] [--user-weight 2] [...]
 *
 * Takes the guard flags of `edgearmor check` (flags, EDGEARMOR_* variables and edgearmor.config.json
 * merged the same way). Prints one line per case and exits 1 when any case fails.
 */
import { parseArgs } from 'node:util';
import { guardOptionsFrom, GUARD_FLAGS, withNegativeNumbers } from '../../src/cli/flags.js';
import { runAcceptance } from '../../src/eval/acceptance.js';
import { createNodeGuard } from '../../src/node.js';

const { values } = parseArgs({ args: withNegativeNumbers(process.argv.slice(2)), options: GUARD_FLAGS });
const { options, variant, remoteProxy, chatTemplate } = guardOptionsFrom(values);
const guard = createNodeGuard({
  ...options,
  ...(values.model ? { modelDir: values.model } : {}),
  modelVariant: variant,
  ...(remoteProxy ? { remoteProxy } : {}),
  ...(chatTemplate !== undefined ? { chatTemplate } : {}),
});
try {
  const results = await runAcceptance((input) => guard.check(input));
  const fixed = (x: number | null) => (x === null ? '-' : x.toFixed(3));
  // How far each verdict is from flipping: a span flags when score > -tau; the tool list's evidence blocks on its own.
  for (const r of results) {
    const by = r.evidence.length > 0 ? `  flagged by ${r.evidence.join(' + ')}` : '';
    console.log(`${r.passed ? 'ok  ' : 'FAIL'} ${r.id.padEnd(28)} expected ${r.expected}, got ${r.decision} (${r.reason})  score ${fixed(r.score)}  dU ${fixed(r.userDelta)}${by}`);
  }
  const passed = results.filter((r) => r.passed).length;
  console.log(`${passed} of ${results.length} acceptance cases pass (${values.model ?? 'embedded model'}, ${variant})`);
  process.exitCode = passed === results.length ? 0 : 1;
} finally {
  await guard.dispose();
}
