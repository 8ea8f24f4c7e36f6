/**
 * `edgearmor adapt`'s screening and training, alone and side by side: what each does in the same minutes, so the
 * thread split of training beside screening can be chosen on this machine (docs/adapt.md, "Training beside
 * screening"). Uses a work directory `edgearmor adapt --keep-work` left (its traffic, planted cases, generator
 * files) and the base model it adapted.
 *
 *   npx tsx lab/bench/adapt-beside.ts --work DIR --base MODEL [--minutes 2] [--runs alone,beside,beside-1]
 *
 * alone: training for the minutes, then screening for as long; beside: both at once (training's threads 2);
 * beside-1: both at once, training on 1 thread. Prints steps a minute and conversations screened a minute.
 */
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { pythonEnv } from '../../src/adapt/python.js';
import { callSites, readTraffic } from '../../src/adapt/traffic.js';
import { createNodeGuard } from '../../src/node.js';

const ROOT = resolve(import.meta.dirname, '../..');
const { values } = parseArgs({ options: { work: { type: 'string' }, base: { type: 'string' }, minutes: { type: 'string', default: '2' }, runs: { type: 'string', default: 'alone,beside,beside-1' } } });
if (!values.work || !values.base) throw new Error('usage: npx tsx lab/bench/adapt-beside.ts --work DIR --base MODEL [--minutes 2] [--runs alone,beside,beside-1]');
const work = resolve(values.work);
const base = resolve(values.base);
const minutes = Number(values.minutes);
// Every training conversation, as screened ones: a run that trained beside screening marked them `unscreened` first.
const trainingTraffic = readFileSync(join(work, 'traffic-train.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => {
    const { unscreened: _, ...c } = JSON.parse(line) as Record<string, unknown>;
    return `${JSON.stringify(c)}\n`;
  })
  .join('');

/** model/adapt.py for `minutes` of training on a copy of the work directory; resolves once training starts and again with its steps a training minute. */
function train(threads: number): { started: Promise<void>; result: Promise<number> } {
  const dir = mkdtempSync(join(tmpdir(), 'adapt-beside-'));
  for (const f of ['traffic-holdout.jsonl', 'generator-train.jsonl', 'generator-validation.jsonl']) cpSync(join(work, f), join(dir, f));
  writeFileSync(join(dir, 'traffic-train.jsonl'), trainingTraffic);
  const args = [join(ROOT, 'model/adapt.py'), '--work', dir, '--base', base, '--threads', String(threads), '--train-minutes', String(minutes), '--eval-every-minutes', '1000', '--patience', '0', '--holdout-cases', '40'];
  const child = spawn('/usr/bin/python3', args, { env: pythonEnv(threads), stdio: ['ignore', 'pipe', 'ignore'] });
  let out = '';
  let onStart = (): void => undefined;
  const started = new Promise<void>((done) => (onStart = done));
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (out.includes('"stage": "train"') && out.includes('"event": "eval"')) onStart();
  });
  const result = new Promise<number>((done, fail) =>
    child.on('exit', (code) => {
      if (code !== 0) return fail(new Error(`adapt.py exited with ${String(code)}`));
      const log = JSON.parse(readFileSync(join(dir, 'train-log.json'), 'utf8')) as { steps_done: number; progress: Array<{ step: number; minutes: number }> };
      rmSync(dir, { recursive: true, force: true });
      // Steps a minute over the progress records (training only, not the final evaluation).
      const last = log.progress.at(-1)!;
      done(last.step / last.minutes);
    }),
  );
  return { started, result };
}

/** The base guard screens the work directory's training conversations, every call of one in one run, for `minutes`; conversations a minute. */
async function screen(): Promise<number> {
  const guard = createNodeGuard({ modelDir: base });
  try {
    const file = join(mkdtempSync(join(tmpdir(), 'adapt-beside-')), 'traffic.jsonl');
    writeFileSync(file, trainingTraffic);
    const conversations = readTraffic(file).filter((c) => callSites(c).length > 0);
    await guard.check(callSites(conversations[0]!)[0]!.input);
    const start = Date.now();
    let done = 0;
    for (const c of conversations) {
      if (Date.now() - start > minutes * 60000) break;
      await guard.checkMany(callSites(c).map((s) => s.input));
      done++;
    }
    return done / ((Date.now() - start) / 60000);
  } finally {
    await guard.dispose();
  }
}

for (const run of values.runs.split(',')) {
  if (run === 'alone') {
    const t = train(2);
    const steps = await t.result;
    const conversations = await screen();
    console.log(`alone: training ${steps.toFixed(1)} steps/min (2 threads); screening ${conversations.toFixed(1)} conversations/min`);
  } else if (run === 'beside' || run === 'beside-1') {
    const threads = run === 'beside' ? 2 : 1;
    const t = train(threads);
    await t.started;
    const conversations = await screen();
    console.log(`${run}: training ${(await t.result).toFixed(1)} steps/min (${threads} threads); screening ${conversations.toFixed(1)} conversations/min`);
  } else throw new Error(`unknown run ${run}: alone, beside, beside-1`);
}
