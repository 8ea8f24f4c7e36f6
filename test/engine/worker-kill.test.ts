/**
 * Killing the guard's worker mid-check never takes the host down: a host process runs a
 * worker guard in node:worker_threads, a fault lands while checks are in flight, and the host must
 * exit 0 having printed a failure-policy verdict (or the caller's own abort/dispose rejection) for
 * every call, and a model verdict for the next check. onnxruntime-node aborted such a host with
 * `terminate called after throwing an instance of 'Napi::Error'` (exit 134), so a worker thread runs
 * onnxruntime-node in a child process of its own ('node-process'), which exits with the thread.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';

const ROOT = join(import.meta.dirname, '../..');
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const HOST = join(import.meta.dirname, 'hosts/kill-worker-host.ts');
const MODEL_DIR = join(ROOT, 'public/models/edgearmor-proxy');
// Up to four worker starts (tsx transpiles the worker's imports), model loads and a few checks on wasm.
const HOST_TIMEOUT_MS = 90_000;
// Long enough for the worker to be inside inference, short enough that the check is still running.
const CHECK_TIMEOUT_MS = 60_000;
// (onnxruntime-node in the worker's child process answers this case in about 100 ms, so the fault comes early.)
const KILL_DELAY_MS = 20;

type Line = { label: string; verdict?: { decision: string; reason: string; code: string | null }; rejected?: { code: string }; backend?: string; fallbackReason?: string };

function runHost(backend: string, timeoutMs: number, ...faults: string[]) {
  const r = spawnSync(TSX, [HOST, MODEL_DIR, backend, String(timeoutMs), String(KILL_DELAY_MS), ...faults], { encoding: 'utf8', timeout: HOST_TIMEOUT_MS });
  const lines = r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line);
  return { status: r.status, signal: r.signal, stderr: r.stderr, lines, byLabel: (label: string) => lines.find((l) => l.label === label) };
}

const FAILURE_BLOCK = { decision: 'block', reason: 'failure-policy' };

describe.skipIf(!requirement(existsSync(join(MODEL_DIR, 'manifest.json')), 'the embedded model'))('a worker_threads guard whose worker is killed mid-check', () => {
  it("survives worker.terminate() with 3 checks in flight and while idle, an abort with grace 0 and dispose() mid-check (backend preference 'node', which runs in the worker's child process)", () => {
    const host = runHost('node', CHECK_TIMEOUT_MS, 'terminate:3', 'terminate-idle:0', 'abort:2', 'dispose:2');
    expect(host.stderr).not.toMatch(/Napi::Error|terminate called/);
    expect({ status: host.status, signal: host.signal }).toEqual({ status: 0, signal: null });
    // onnxruntime-node runs in the worker's child process: the native run dies with it, never in the host.
    expect(host.byLabel('ready')).toMatchObject({ backend: 'node-process', fallbackReason: null });
    // Calls in flight when the worker dies are sent once more to a fresh worker: the model answers them.
    for (const i of [0, 1, 2]) expect(host.byLabel(`terminate-${i}`)?.verdict).toMatchObject({ reason: 'model' });
    expect(host.byLabel('terminate-next')?.verdict).toMatchObject({ reason: 'model' });
    // A check sent right after terminate() (not awaited) reaches the dying worker, and is re-sent.
    expect(host.byLabel('terminate-idle-next')?.verdict).toMatchObject({ reason: 'model' });
    // The aborted call is the caller's own; the worker that could not stop it at once is replaced, and its neighbour is re-sent there.
    expect(host.byLabel('abort-0')?.rejected).toMatchObject({ code: 'aborted' });
    expect(host.byLabel('abort-1')?.verdict).toMatchObject({ reason: 'model' });
    expect(host.byLabel('abort-next')?.verdict).toMatchObject({ reason: 'model' });
    for (const i of [0, 1]) expect(host.byLabel(`dispose-${i}`)?.rejected).toMatchObject({ code: 'disposed' });
    expect(host.byLabel('done')).toBeDefined();
  }, HOST_TIMEOUT_MS);

  it('survives the stuck-call watchdog (timeoutMs 100, stuckWorkerGraceMs 0): timeouts block, then the next check gets a verdict', () => {
    const host = runHost('wasm', 100, 'timeout:2');
    expect(host.stderr).not.toMatch(/Napi::Error|terminate called/);
    expect({ status: host.status, signal: host.signal }).toEqual({ status: 0, signal: null });
    expect(host.byLabel('ready')).toMatchObject({ backend: 'wasm', fallbackReason: null });
    expect(host.byLabel('timeout-0')?.verdict).toEqual({ ...FAILURE_BLOCK, code: 'timeout' });
    // The first call's watchdog (grace 0) may kill the worker before the second call's own timer fires.
    expect(host.byLabel('timeout-1')?.verdict).toMatchObject(FAILURE_BLOCK);
    expect(['timeout', 'worker-crashed']).toContain(host.byLabel('timeout-1')?.verdict?.code);
    // With timeoutMs 100 the next check may time out too on a slow machine; either way it is answered, never hung.
    expect(host.byLabel('timeout-next')?.verdict?.reason).toMatch(/^(model|failure-policy)$/);
    expect(host.byLabel('done')).toBeDefined();
  }, HOST_TIMEOUT_MS);
});
