/**
 * The children of scoring threads are reaped, and say nothing when their host goes away: worker threads whose
 * guards score in a child process (a user's thread with isolation 'process', createGuard's Node worker on
 * backend 'node') are terminated while their child loads, works or replies, and replaced by the stuck-worker
 * watchdog (hosts/reap-host.ts). Afterwards no zombie child of the host is left and no scoring child still
 * runs; nothing was printed on the host's stderr (a child whose reply found its channel closed printed an
 * uncaught `write EPIPE` there); every call settled with a verdict or a typed error. Linux: it reads /proc.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';
import { makeTinyGuardModel, TINY_GUARD_MODEL_AVAILABLE } from './tiny-guard-model.js';

const ROOT = join(import.meta.dirname, '../..');
const TSX = join(ROOT, 'node_modules/.bin/tsx');
const HOST = join(import.meta.dirname, 'hosts/reap-host.ts');
// Each kind of ending, this many times (a thread and its child start each time).
const ROUNDS = 3;
// About a dozen thread and child starts under tsx, each loading the tiny model, plus the host's settle wait.
const HOST_TIMEOUT_MS = 240_000;

type Line = { label: string; verdict?: { decision: string; reason: string; code: string | null }; rejected?: { code: string | null }; zombies?: string[]; running?: number[] };

describe.skipIf(!requirement(TINY_GUARD_MODEL_AVAILABLE && process.platform === 'linux', 'Linux (/proc) and the tiny guard model'))('scoring children of terminated and replaced worker threads', () => {
  let host: { status: number | null; stderr: string; lines: Line[] };
  beforeAll(async () => {
    const modelDir = await makeTinyGuardModel();
    const r = spawnSync(TSX, [HOST, modelDir, String(ROUNDS)], { encoding: 'utf8', timeout: HOST_TIMEOUT_MS });
    host = { status: r.status, stderr: r.stderr, lines: r.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Line) };
  }, HOST_TIMEOUT_MS);

  it('are all reaped: no zombie child of the host and no scoring child left running', () => {
    expect(host.status, host.stderr).toBe(0);
    expect(host.lines.filter((l) => l.label.startsWith('thread-'))).toHaveLength(ROUNDS);
    expect(host.lines.find((l) => l.label === 'left')).toEqual({ label: 'left', zombies: [], running: [] });
  });

  it("print nothing on the host's stderr when their host goes away mid-reply, and every call settles with a verdict or a typed error", () => {
    expect(host.stderr).not.toMatch(/EPIPE|Error|^\s+at /m);
    expect(host.lines.find((l) => l.label === 'ready')).toMatchObject({ backend: 'node-process' });
    const calls = host.lines.filter((l) => /^(terminate|abort|next)-/.test(l.label));
    expect(calls).toHaveLength(ROUNDS * 4);
    for (const call of calls) {
      if (call.rejected) expect(call).toMatchObject({ label: expect.stringMatching(/^abort-/), rejected: { code: 'aborted' } });
      // A failure never allows: it blocks by the failure policy.
      else if (call.verdict?.reason !== 'model') expect(call.verdict).toMatchObject({ decision: 'block', reason: 'failure-policy' });
    }
    for (let i = 0; i < ROUNDS; i++) expect(host.lines.find((l) => l.label === `next-${i}`)?.verdict).toMatchObject({ reason: 'model' });
  });
});
