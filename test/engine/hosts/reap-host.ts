/**
 * A host process for test/engine/child-reaping.test.ts: worker threads whose guards score in a child process,
 * each ended while its child works or replies, and what is left of those children afterwards.
 *
 * - A user's own thread running several createNodeGuard({ isolation: 'process' }) is terminated at the first
 *   progress event of its children's loads (they still have replies to send), or right after a check was sent.
 * - createGuard's Node worker thread (backend 'node', so onnxruntime-node runs in the worker's child) is
 *   terminated with two checks in flight, and replaced by the stuck-worker watchdog after an abort (grace 0).
 *
 * Prints one JSON line per call outcome, then `{label: 'left', zombies, running}`: zombie children of this
 * process ("pid name"; tsx's esbuild services aside), and scoring children started from it still running, once
 * both are empty or SETTLE_MS passed.
 *
 * usage: tsx reap-host.ts <modelDir> <rounds>
 */
import { readdirSync, readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import type { Verdict } from '../../../src/core/verdict.js';
import { createGuard } from '../../../src/page/create-guard.js';
import { SMALL } from '../../fault-cases.js';

const [modelDir, rounds] = process.argv.slice(2) as [string, string];
// How long the children get to go once their threads are gone (each exits when its channel closes).
const SETTLE_MS = 15_000;
const POLL_MS = 100;
// Children ended by one termination: each is a chance to be caught mid-reply.
const GUARDS_PER_THREAD = 4;
// Every process started from here inherits it, so the scoring children can be told apart from other tests'.
const MARK = `EDGEARMOR_REAP_HOST=${process.pid}`;
process.env['EDGEARMOR_REAP_HOST'] = String(process.pid);

const TSX_API = import.meta.resolve('tsx/esm/api');
// Node ignores `--import tsx` in a Worker's execArgv, so the thread registers tsx's hooks itself.
const thread = (file: URL, workerData?: unknown) =>
  new Worker(`import(${JSON.stringify(TSX_API)}).then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); })`, { eval: true, workerData });

const print = (record: object) => process.stdout.write(`${JSON.stringify(record)}\n`);
const outcome = (label: string, p: Promise<Verdict>) =>
  p.then(
    (v) => print({ label, verdict: { decision: v.decision, reason: v.reason, code: v.error?.code ?? null } }),
    (e: { code?: string; name?: string }) => print({ label, rejected: { code: e.code ?? null, name: e.name ?? null } }),
  );

/** Processes by pid: parent, state and command line, read from /proc (an entry can vanish while it is read). */
function processes(): Array<{ pid: number; ppid: number; comm: string; state: string; cmdline: string; environ: string }> {
  const out = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces or parentheses itself.
      const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      let environ = '';
      try {
        environ = readFileSync(`/proc/${entry}/environ`, 'utf8');
      } catch {
        // Another user's process: not one of ours.
      }
      out.push({ pid: Number(entry), ppid: Number(ppid), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), state: state!, cmdline, environ });
    } catch {
      continue;
    }
  }
  return out;
}

function left() {
  const all = processes();
  return {
    // Not tsx's esbuild service, which each thread here starts when it registers tsx: the harness's, not the library's.
    zombies: all.filter((p) => p.ppid === process.pid && p.state === 'Z' && p.comm !== 'esbuild').map((p) => `${p.pid} ${p.comm}`),
    running: all.filter((p) => p.pid !== process.pid && p.state !== 'Z' && p.cmdline.includes('process-child') && p.environ.split('\0').includes(MARK)).map((p) => p.pid),
  };
}

// A user's own thread with GUARDS_PER_THREAD guards, terminated at the first progress event of their children's
// loads (the children still have replies to send), or once one check was answered and the next sent.
for (let i = 0; i < Number(rounds); i++) {
  const at = i % 2 === 0 ? 'progress' : 'sending';
  const worker = thread(new URL('./isolated-guard-thread.ts', import.meta.url), { modelDir, guards: GUARDS_PER_THREAD });
  let sent = 0;
  await new Promise<void>((resolve) =>
    worker.on('message', (m: { type: string }) => {
      if (m.type === at && (at === 'progress' || ++sent === GUARDS_PER_THREAD + 1)) resolve();
    }),
  );
  await worker.terminate();
  print({ label: `thread-${i}`, terminatedAt: at });
}

// createGuard's worker thread, its model in the worker's child process.
let worker: Worker | undefined;
const guard = createGuard({
  worker: () => (worker = thread(new URL('../../../src/worker.ts', import.meta.url))),
  modelDir,
  backend: 'node',
  stuckWorkerGraceMs: 0,
});
const status = await guard.ready;
print({ label: 'ready', backend: status.backend });
for (let i = 0; i < Number(rounds); i++) {
  const calls = [0, 1].map((j) => outcome(`terminate-${i}-${j}`, guard.check(SMALL)));
  void worker!.terminate();
  await Promise.all(calls);
  // The caller's abort: the worker cannot stop the call within grace 0, so the watchdog replaces it.
  const controller = new AbortController();
  const aborted = outcome(`abort-${i}`, guard.check(SMALL, { signal: controller.signal }));
  controller.abort();
  await aborted;
  await outcome(`next-${i}`, guard.check(SMALL));
}
await guard.dispose();

const deadline = Date.now() + SETTLE_MS;
let now = left();
while ((now.zombies.length > 0 || now.running.length > 0) && Date.now() < deadline) {
  await new Promise((r) => setTimeout(r, POLL_MS));
  now = left();
}
print({ label: 'left', ...now });
