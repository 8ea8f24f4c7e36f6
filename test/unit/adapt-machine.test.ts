/** adapt measures torch's matrix multiply before training and tells a user on a slow BLAS what to install. */
import { describe, expect, it } from 'vitest';
import { SLOW_MATMUL_GFLOPS, slowTorchAdvice } from '../../src/adapt/machine.js';

describe("adapt's torch speed check", () => {
  it('says nothing for a torch on an optimised BLAS', () => {
    expect(slowTorchAdvice({ matmulGflops: SLOW_MATMUL_GFLOPS, blas: 'open', threads: 2 })).toBeNull();
    expect(slowTorchAdvice({ matmulGflops: 40, blas: 'mkl', threads: 2 })).toBeNull();
  });

  it('warns below the threshold with the measured speed, the BLAS and the fix for Debian and for pip', () => {
    const advice = slowTorchAdvice({ matmulGflops: 0.8, blas: 'generic', threads: 2 });
    expect(advice).toContain('0.8 GFLOP/s on 2 threads (BLAS: generic)');
    expect(advice).toContain('apt-get install libopenblas0-openmp');
    expect(advice).toContain('pip install of torch');
  });

  it('says the speed is unknown when the probe could not run, rather than calling it fast', () => {
    expect(slowTorchAdvice({ matmulGflops: Number.NaN, blas: 'unknown', threads: 2 })).toMatch(/could not measure/);
  });
});
