/**
 * adapt measures torch's matrix multiply before training and tells a user on a slow BLAS what to install; it
 * trains on a CUDA GPU when torch sees one; its Python's environment (threads, OpenMP, the allocator).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { InvalidOptionsError } from '../../src/core/errors.js';
import { SLOW_MATMUL_GFLOPS, slowTorchAdvice, trainingDevice } from '../../src/adapt/machine.js';
import { pythonEnv, TRAINING_MALLOC } from '../../src/adapt/python.js';
import { CLI, NODE } from '../cli.js';

/** The Python adapt runs where nothing else is asked for (src/adapt/python.ts findPython's first choice). */
const PYTHON = '/usr/bin/python3';
/** Minor page faults of 8 rounds of a 64 MB buffer written and freed (above the 32 MB up to which glibc learns to keep blocks by itself). */
const PAGE_FAULTS = [
  'import resource',
  'faults = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_minflt',
  'start = faults()',
  'for _ in range(8):',
  '    b = bytearray(64 << 20)',
  '    del b',
  'print(faults() - start)',
].join('\n');

const cpuOnly = { matmulGflops: 40, blas: 'openblas', threads: 2, gpu: null };
const withGpu = { ...cpuOnly, gpu: 'NVIDIA H200' };

describe("adapt's torch speed check", () => {
  it('says nothing for a torch on an optimised BLAS', () => {
    expect(slowTorchAdvice({ matmulGflops: SLOW_MATMUL_GFLOPS, blas: 'open', threads: 2, gpu: null })).toBeNull();
    expect(slowTorchAdvice({ matmulGflops: 40, blas: 'mkl', threads: 2, gpu: null })).toBeNull();
  });

  it('warns below the threshold with the measured speed, the BLAS and the fix for Debian and for pip', () => {
    const advice = slowTorchAdvice({ matmulGflops: 0.8, blas: 'generic', threads: 2, gpu: null });
    expect(advice).toContain('0.8 GFLOP/s on 2 threads (BLAS: generic)');
    expect(advice).toContain('apt-get install libopenblas0-openmp');
    expect(advice).toContain('pip install of torch');
  });

  it('says the speed is unknown when the probe could not run, rather than calling it fast', () => {
    expect(slowTorchAdvice({ matmulGflops: Number.NaN, blas: 'unknown', threads: 2, gpu: null })).toMatch(/could not measure/);
  });

  it('gives no BLAS advice when training runs on a GPU: the CPU only prepares the data there', () => {
    expect(slowTorchAdvice({ ...withGpu, matmulGflops: 0.8 }, 'cuda')).toBeNull();
    expect(slowTorchAdvice({ ...withGpu, matmulGflops: 0.8 }, 'cpu')).toMatch(/0\.8 GFLOP\/s/);
  });
});

describe("the environment adapt's Python runs in", () => {
  it('gives torch the thread count and OpenMP threads that sleep while they wait, unless the caller chose a policy', () => {
    const saved = process.env['OMP_WAIT_POLICY'];
    try {
      delete process.env['OMP_WAIT_POLICY'];
      expect(pythonEnv(3)).toMatchObject({ OMP_NUM_THREADS: '3', OMP_WAIT_POLICY: 'PASSIVE', PYTHONUNBUFFERED: '1' });
      process.env['OMP_WAIT_POLICY'] = 'ACTIVE';
      expect(pythonEnv(2)).toMatchObject({ OMP_NUM_THREADS: '2', OMP_WAIT_POLICY: 'ACTIVE' });
    } finally {
      if (saved === undefined) delete process.env['OMP_WAIT_POLICY'];
      else process.env['OMP_WAIT_POLICY'] = saved;
    }
  });

  it("keeps training's large freed blocks from the kernel (glibc), so they are not faulted in again on every step, unless the caller set GLIBC_TUNABLES", () => {
    const saved = process.env['GLIBC_TUNABLES'];
    try {
      delete process.env['GLIBC_TUNABLES'];
      const env = pythonEnv(2);
      expect(env['GLIBC_TUNABLES']).toBe(TRAINING_MALLOC);
      // 8 rounds of a 64 MB buffer written and freed: 16,384 pages of 4 kB each round where glibc maps and unmaps
      // it, one round's worth (or a few huge pages) where it keeps the block. glibc ignores a tunable it cannot parse,
      // so this is what says the string works.
      const faults = (e: NodeJS.ProcessEnv) => Number(spawnSync(PYTHON, ['-c', PAGE_FAULTS], { env: e, encoding: 'utf8' }).stdout.trim());
      const { GLIBC_TUNABLES: _, ...untuned } = env;
      expect(faults(env)).toBeLessThan(2 * 16_384);
      expect(faults(untuned)).toBeGreaterThan(6 * 16_384);
      process.env['GLIBC_TUNABLES'] = 'glibc.malloc.arena_max=1';
      expect(pythonEnv(2)['GLIBC_TUNABLES']).toBe('glibc.malloc.arena_max=1');
    } finally {
      if (saved === undefined) delete process.env['GLIBC_TUNABLES'];
      else process.env['GLIBC_TUNABLES'] = saved;
    }
  });
});

describe("adapt's training device", () => {
  it('trains on the GPU torch sees unless told to use the CPU, and on the CPU where there is none', () => {
    expect(trainingDevice('auto', withGpu)).toBe('cuda');
    expect(trainingDevice('cuda', withGpu)).toBe('cuda');
    expect(trainingDevice('cpu', withGpu)).toBe('cpu');
    expect(trainingDevice('auto', cpuOnly)).toBe('cpu');
    expect(trainingDevice('cpu', cpuOnly)).toBe('cpu');
  });

  it('refuses cuda where torch sees no GPU, saying what is allowed, rather than training on the CPU', () => {
    expect(() => trainingDevice('cuda', cpuOnly)).toThrow(InvalidOptionsError);
    expect(() => trainingDevice('cuda', cpuOnly)).toThrow(/torch sees no CUDA GPU here; allowed: auto or cpu/);
  });
});

describe('edgearmor adapt --device', () => {
  it('refuses a device it does not know before reading the traffic, naming the ones it does', () => {
    const run = spawnSync(NODE, [CLI, 'adapt', 'no-such-traffic.jsonl', '--out', 'no-such-dir', '--device', 'gpu'], { encoding: 'utf8', timeout: 60_000 });
    expect(run.status).toBe(2);
    expect(run.stderr.trim()).toBe('edgearmor: --device: received "gpu"; allowed: auto, cpu, cuda');
  });
});
