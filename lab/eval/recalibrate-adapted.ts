/**
 * Replays step 5 of an `edgearmor adapt` run kept with --keep-work: the adapted model scores the run's planted
 * held-out cases (WORK/holdout-cases.jsonl) at the default options, as adapt scores them, and today's calibration
 * chooses its operating point there; OUT is a copy of the adapted model directory with that point pinned. Used to
 * measure a change to the calibration (a new signal) on runs already made, without training again; what it reads
 * is adapt's own held-out traffic, never an evaluation set.
 *
 *   npx tsx lab/eval/recalibrate-adapted.ts WORK MODEL OUT [--target-fpr 0.03]
 */
import { cpSync, existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { chooseOperatingPoint, DEFAULT_CALIBRATION_SEARCH, operatingPoint, pointOptions, thresholdsOf, type OperatingPoint } from '../../src/core/calibration.js';
import { resolveOptions } from '../../src/core/options.js';
import { writeModelOptions } from '../../src/engine/files-node.js';
import { readHoldoutCases, scoreByConversation } from '../../src/adapt/holdout.js';
import { createNodeGuard } from '../../src/node.js';
import { join } from 'node:path';

const { positionals, values } = parseArgs({ allowPositionals: true, options: { 'target-fpr': { type: 'string' } } });
const [work, model, out] = positionals;
if (!work || !model || !out) throw new Error('usage: npx tsx lab/eval/recalibrate-adapted.ts WORK MODEL OUT [--target-fpr 0.03]');
if (existsSync(out)) throw new Error(`${out} exists: give a new directory`);
const targetFpr = values['target-fpr'] === undefined ? DEFAULT_CALIBRATION_SEARCH.targetFpr : Number(values['target-fpr']);

const base = resolveOptions({});
const cases = readHoldoutCases(join(work, 'holdout-cases.jsonl'));
cpSync(model, out, { recursive: true });
// Scored as adapt scores the candidate: its q4 at the default options (the copied guard-options.json is replaced below, after scoring).
const scoringDir = join(work, 'candidate');
const guard = createNodeGuard({ modelDir: existsSync(scoringDir) ? scoringDir : model });
let done = 0;
const scored = await scoreByConversation(guard, cases, base, () => process.stderr.write(`\rscored ${++done} of ${cases.length}`));
process.stderr.write('\n');
await guard.dispose();
const evidence = scored.map((x) => x.e);
const current = thresholdsOf(base);
const search = { ...DEFAULT_CALIBRATION_SEARCH, targetFpr, preferredUserWeight: base.userWeight, current };
// The point adapt chose before the unlikely-tool rule existed: the same search with that signal left out.
const without = chooseOperatingPoint(evidence.map((e) => ({ ...e, evidence: { ...e.evidence, toolLogProb: null } })), search);
const withRule = chooseOperatingPoint(evidence, search);
const line = (name: string, p: OperatingPoint) =>
  `${name}: injected ${(100 * p.tpr).toFixed(1)}%, benign ${(100 * p.fpr).toFixed(1)}%, ROC-AUC ${p.rocAuc?.toFixed(3)}; w ${p.userWeight}, tau ${p.tau}, unlikely tool ${p.unlikelyToolThreshold ?? 'off'}`;
console.log(`${scored.length} of ${cases.length} held-out cases scored (${evidence.filter((e) => e.label === 'injected').length} injected)`);
console.log(line('shipped point', operatingPoint(evidence, current)));
console.log(line('chosen without the unlikely-tool rule', without.chosen));
console.log(line('chosen with it', withRule.chosen));
await writeModelOptions(out, { ...pointOptions(withRule.chosen, withRule.signals), familiarityThreshold: null }, { source: 'lab/eval/recalibrate-adapted.ts', created: new Date().toISOString() });
console.log(`wrote ${out}`);
