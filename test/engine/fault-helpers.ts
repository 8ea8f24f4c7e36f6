/** What both Node fault matrices (the worker API, the child-process backend) share: settling a call with a hang guard, and a tampered model copy. */
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Verdict } from '../../src/core/verdict.js';

export type Settled = { kind: 'verdict'; verdict: Verdict } | { kind: 'rejected'; code: string } | { kind: 'hang' };

/** How a call ended: its verdict, its rejection's code, or 'hang' when it was still pending after `hangMs`. */
export function settle(p: Promise<Verdict>, hangMs: number): Promise<Settled> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const hang = new Promise<Settled>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'hang' }), hangMs);
  });
  const answer = p.then(
    (verdict): Settled => ({ kind: 'verdict', verdict }),
    (e: { code?: string }): Settled => ({ kind: 'rejected', code: e.code ?? `untyped: ${String(e)}` }),
  );
  return Promise.race([answer, hang]).finally(() => clearTimeout(timer));
}

/** A copy of a model directory whose q4 weights have their last byte flipped (its manifest no longer matches). */
export function tamperedCopy(modelDir: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'edgearmor-tampered-'));
  cpSync(modelDir, dir, { recursive: true });
  const onnx = join(dir, 'onnx/model_q4.onnx');
  const bytes = readFileSync(onnx);
  bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
  writeFileSync(onnx, bytes);
  return dir;
}
