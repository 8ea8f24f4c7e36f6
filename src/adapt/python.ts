/** The Python half of `edgearmor adapt` and `edgearmor calibrate`: finding an interpreter (with torch to train), and running model/adapt.py. */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ModelLoadError } from '../core/errors.js';

const PYTHON_PACKAGES =
  'Debian/Ubuntu: apt-get install python3-torch python3-onnx python3-numpy python3-regex libopenblas0-openmp; elsewhere: pip install torch onnx numpy regex (then EDGEARMOR_PYTHON=/path/to/python3)';

const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OPENBLAS = '/usr/lib/x86_64-linux-gnu/openblas-openmp';

/**
 * The Python adapt runs, or a clear error naming what to install: `train` needs torch, onnx, numpy and regex;
 * `plant` (model/adapt.py --plant-only, for calibrate) only the standard library.
 */
export function findPython(explicit?: string, purpose: 'train' | 'plant' = 'train'): string {
  const candidates = explicit ? [explicit] : process.env['EDGEARMOR_PYTHON'] ? [process.env['EDGEARMOR_PYTHON']] : ['/usr/bin/python3', 'python3'];
  const tried: string[] = [];
  for (const py of candidates) {
    const r = spawnSync(py, ['-c', purpose === 'train' ? 'import torch, onnx, numpy, regex' : 'import json, lzma, random'], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
    if (r.status === 0) return py;
    const last = r.error ? r.error.message : (r.stderr ?? '').trim().split('\n').pop() ?? `exit ${r.status}`;
    tried.push(`${py}: ${last}`);
  }
  const need =
    purpose === 'train'
      ? `edgearmor adapt trains with Python and needs torch, onnx, numpy and regex, which no Python here imports (${tried.join('; ')}). Install them: ${PYTHON_PACKAGES}.`
      : `edgearmor calibrate plants injections with Python 3 (the standard library only), which did not run here (${tried.join('; ')}); install python3 or set EDGEARMOR_PYTHON=/path/to/python3.`;
  throw new ModelLoadError(need, {
    tried,
  });
}

/**
 * glibc's allocator for training: never hand a freed block back to the kernel (no mmap for large blocks, no
 * trimming), on transparent huge pages where the kernel offers them. Each training step allocates and frees
 * logits and gradients of a hundred MB and more; by default glibc maps and unmaps each, and the kernel zeroes
 * every page again on the next step: two-fifths of training's CPU time went to page faults. Other C libraries
 * ignore the variable; glibc before 2.35 ignores the huge pages.
 */
export const TRAINING_MALLOC = 'glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184:glibc.malloc.hugetlb=1';

/**
 * The environment Python trains in: its thread count, OpenMP threads that sleep rather than spin while they wait,
 * the allocator settings of {@link TRAINING_MALLOC} (each unless the caller's environment sets its own), and
 * Debian's OpenMP OpenBLAS ahead of the reference BLAS where it is installed. Spinning threads take the cores from
 * whatever else runs, and alone they train no faster (docs/speed.md, "Beside other work"); the allocator settings
 * about double the steps a minute (docs/speed.md, "Training's allocations").
 */
export function pythonEnv(threads: number): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PYTHONUNBUFFERED: '1',
    OMP_NUM_THREADS: String(threads),
    OMP_WAIT_POLICY: process.env['OMP_WAIT_POLICY'] ?? 'PASSIVE',
    GLIBC_TUNABLES: process.env['GLIBC_TUNABLES'] ?? TRAINING_MALLOC,
  };
  if (existsSync(OPENBLAS)) env['LD_LIBRARY_PATH'] = `${OPENBLAS}${env['LD_LIBRARY_PATH'] ? `:${env['LD_LIBRARY_PATH']}` : ''}`;
  return env;
}

/** Runs model/adapt.py, passing its JSON progress lines on; SIGINT (the signal) stops training and keeps the best step. */
export function runPython(python: string, args: string[], threads: number, log: string, onLine: (event: Record<string, unknown>) => void, signal?: AbortSignal): Promise<void> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(python, [join(PACKAGE_ROOT, 'model', 'adapt.py'), ...args], { cwd: join(PACKAGE_ROOT, 'model'), env: pythonEnv(threads), stdio: ['ignore', 'pipe', 'pipe'] });
    const logStream = createWriteStream(log);
    let buffer = '';
    const stderrTail: string[] = [];
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        logStream.write(`${line}\n`);
        try {
          onLine(JSON.parse(line) as Record<string, unknown>);
        } catch {
          // Not a progress line: kept in the log only.
        }
      }
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      logStream.write(text);
      stderrTail.push(...text.split('\n').filter(Boolean));
      stderrTail.splice(0, Math.max(0, stderrTail.length - 20));
    });
    const stop = (): void => void child.kill('SIGINT');
    signal?.addEventListener('abort', stop, { once: true });
    child.on('error', (e) => reject(new ModelLoadError(`could not start ${python}: ${e.message}`, {}, { cause: e })));
    child.on('close', (code) => {
      signal?.removeEventListener('abort', stop);
      logStream.end();
      if (code === 0) resolvePromise();
      else reject(new ModelLoadError(`model/adapt.py failed (exit ${code}): ${stderrTail.slice(-3).join(' | ') || 'no message'} (full log: ${log})`, { exitCode: code ?? -1 }));
    });
  });
}

/** model/adapt.py running: settled when it exits; `failed` says so at once, `cancel` stops it and waits for it. */
export interface TrainingRun {
  done: Promise<void>;
  startedAt: number;
  failed: () => boolean;
  /** SIGINT, as an abort does (the best step so far is exported), then waits for the exit; never rejects. */
  cancel: () => Promise<void>;
}

/** {@link runPython} started now, with a handle to watch it while other work goes on beside it (screening). */
export function startPython(python: string, args: string[], threads: number, log: string, onLine: (event: Record<string, unknown>) => void, signal?: AbortSignal): TrainingRun {
  const stop = new AbortController();
  signal?.addEventListener('abort', () => stop.abort(), { once: true });
  let failed = false;
  const done = runPython(python, args, threads, log, onLine, stop.signal).catch((error: unknown) => {
    failed = true;
    throw error;
  });
  // Watched, so a failure while nothing awaits it yet is not an unhandled rejection; the caller awaits `done`.
  done.catch(() => undefined);
  return {
    done,
    startedAt: Date.now(),
    failed: () => failed,
    cancel: async () => {
      stop.abort();
      await done.catch(() => undefined);
    },
  };
}
