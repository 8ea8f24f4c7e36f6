/**
 * What torch's matrix multiply does on this machine, measured before adapt plans its training. A torch
 * linked against the reference BLAS (a Debian machine without an optimised BLAS package) multiplies about
 * forty times slower than one on OpenBLAS or MKL, and adapt would silently train forty times less in the
 * same minutes; measured first, the user is told and given the fix.
 */
import { spawnSync } from 'node:child_process';
import { InvalidOptionsError } from '../core/errors.js';
import { pythonEnv } from './python.js';

/** The measurement: fp32 GFLOP/s of a 512 x 512 matrix multiply at adapt's thread count, torch's BLAS and GPU. */
export interface TorchSpeed {
  matmulGflops: number;
  /**
   * The BLAS torch multiplied with: the library loaded into the process where the platform says (`openblas`,
   * `mkl`, `blis`, `reference`...: Debian's torch is built against the generic `libblas.so.3` that its alternatives
   * point at OpenBLAS or the reference BLAS), else what `torch.__config__.show()` names, else 'unknown'.
   */
  blas: string;
  threads: number;
  /** The CUDA GPU torch sees (its name), or null: none, or a torch built without CUDA. */
  gpu: string | null;
}

/** Where adapt trains: `auto` is a CUDA GPU when torch sees one, else the CPU. */
export type TrainingDevice = 'auto' | 'cpu' | 'cuda';
export const TRAINING_DEVICES: readonly TrainingDevice[] = ['auto', 'cpu', 'cuda'];
/** The device training runs on, `auto` resolved. */
export type ResolvedTrainingDevice = Exclude<TrainingDevice, 'auto'>;

/**
 * Below this, torch is not on an optimised BLAS: OpenBLAS gives 8-60 GFLOP/s on 2 cores of this class of
 * machine, shared or not, and the reference BLAS 0.5-1.5.
 */
export const SLOW_MATMUL_GFLOPS = 3;

const PROBE = `
import json, re, time, torch
torch.set_num_threads(int(__import__('os').environ.get('OMP_NUM_THREADS', '1')))
a = torch.randn(512, 512); b = torch.randn(512, 512)
for _ in range(3): a @ b
n, t = 0, time.perf_counter()
while time.perf_counter() - t < 0.5:
    a @ b; n += 1
dt = time.perf_counter() - t
def loaded():
    try:
        paths = {l.split()[-1] for l in open("/proc/self/maps") if "/" in l}
    except OSError:
        return None
    for name, mark in (("mkl", "libmkl"), ("openblas", "openblas"), ("blis", "blis"), ("atlas", "atlas"), ("reference", "/blas/libblas")):
        if any(mark in p for p in paths):
            return name
    return None
m = re.search(r"BLAS_INFO=(\\w+)", torch.__config__.show())
gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
print(json.dumps({"gflops": 2 * 512 ** 3 * n / dt / 1e9, "blas": loaded() or (m.group(1) if m else "unknown"), "gpu": gpu}))
`;

/** Measures torch's matrix multiply with the environment adapt trains in (half a second). */
export function measureTorch(python: string, threads: number): TorchSpeed {
  const r = spawnSync(python, ['-c', PROBE], { env: pythonEnv(threads), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  const line = (r.stdout ?? '').trim().split('\n').pop() ?? '';
  try {
    const parsed = JSON.parse(line) as { gflops: number; blas: string; gpu?: string | null };
    return { matmulGflops: parsed.gflops, blas: parsed.blas, threads, gpu: parsed.gpu ?? null };
  } catch {
    return { matmulGflops: Number.NaN, blas: 'unknown', threads, gpu: null };
  }
}

/**
 * The device training runs on: a CUDA GPU when asked for or, with `auto`, when torch sees one; else the CPU.
 * Asking for `cuda` where torch sees no GPU is an error (the budget would silently buy a CPU's training).
 */
export function trainingDevice(requested: TrainingDevice, speed: TorchSpeed): ResolvedTrainingDevice {
  if (requested === 'cpu') return 'cpu';
  if (speed.gpu !== null) return 'cuda';
  if (requested === 'auto') return 'cpu';
  throw new InvalidOptionsError(
    'device: received "cuda", but torch sees no CUDA GPU here; allowed: auto or cpu, or a torch built with CUDA on a machine with an NVIDIA GPU (then EDGEARMOR_PYTHON=/path/to/python3)',
    { option: 'device' },
  );
}

/** What to tell a user whose torch multiplies slowly, with the fix, or null when it is fast enough or trains on a GPU. */
export function slowTorchAdvice(speed: TorchSpeed, device: ResolvedTrainingDevice = 'cpu'): string | null {
  if (device === 'cuda') return null;
  if (Number.isNaN(speed.matmulGflops)) return 'could not measure torch\'s matrix multiply speed; training may be slow (see the log)';
  if (speed.matmulGflops >= SLOW_MATMUL_GFLOPS) return null;
  return (
    `torch multiplies matrices at ${speed.matmulGflops.toFixed(1)} GFLOP/s on ${speed.threads} threads (BLAS: ${speed.blas}), below the ${SLOW_MATMUL_GFLOPS} an optimised BLAS gives: ` +
    'training will reach a small fraction of the steps the budget allows. Fix: on Debian/Ubuntu apt-get install libopenblas0-openmp; elsewhere a pip install of torch brings its own fast BLAS (then EDGEARMOR_PYTHON=/path/to/python3)'
  );
}
