import { afterEach, describe, expect, it } from 'vitest';
import { checkInPage, expectAllowed, expectBlocked, HARNESS_GLOBAL, PageGuardError, startGuardPage, type GuardHarness, type PageLike } from '../../src/testing.js';
import type { Verdict } from '../../src/core/verdict.js';
import type { WireError } from '../../src/core/errors.js';

/** A page whose "browser" is this process: evaluate runs the function here, against a stub harness. */
function fakePage(): PageLike & { visited: string[] } {
  const visited: string[] = [];
  return {
    visited,
    goto: async (url: string) => visited.push(url),
    evaluate: async <R, A>(fn: (arg: A) => R | Promise<R>, arg: A) => fn(structuredClone(arg)),
    waitForFunction: async <A>(fn: (arg: A) => unknown, arg: A) => {
      if (!fn(arg)) throw new Error('the harness never appeared');
    },
  };
}

function verdict(decision: 'allow' | 'block'): Verdict {
  return { detected: decision === 'block', decision, reason: 'model', attribution: null, flagged: [], score: 0.4, timings: {} };
}

function failurePolicyVerdict(decision: 'allow' | 'block'): Verdict {
  return {
    ...verdict(decision),
    detected: false,
    reason: 'failure-policy',
    score: null,
    error: { name: 'GuardTimeoutError', code: 'timeout', message: 'the check took longer than 10000 ms', details: {} },
    message: `The guard failed (timeout: the check took longer than 10000 ms); failure policy onError="block" -> ${decision}.`,
  };
}

function installStub(next: Verdict | { code: 'integrity-mismatch' }): void {
  const wire = (v: Verdict | { code: 'integrity-mismatch' }) =>
    'code' in v ? { ok: false as const, error: { name: 'IntegrityError', code: v.code, message: 'model file hash mismatch: may indicate tampering', details: { file: 'onnx/model_q4.onnx' } } } : { ok: true as const, value: v };
  const harness: Partial<GuardHarness> = {
    start: async () => ('code' in next ? (wire(next) as { ok: false; error: WireError }) : { ok: true, value: { state: 'ready', backend: 'wasm', fallbackReason: null, model: 'm', variant: 'q4', maxContextTokens: 1024, windowTokens: 1024, logitsUnavailable: null, attention: false, scoring: 'prefix', modelOptions: null, familiarity: { threshold: null, checks: 0, below: 0 } } }),
    check: async () => wire(next) as Awaited<ReturnType<GuardHarness['check']>>,
  };
  (globalThis as Record<string, unknown>)[HARNESS_GLOBAL] = harness;
}

const INPUT = { messages: [{ role: 'user', content: 'hi' }], action: { name: 'send_money', arguments: {} } };

describe('edgearmor/testing helpers', () => {
  afterEach(() => {
    delete (globalThis as Record<string, unknown>)[HARNESS_GLOBAL];
  });

  it('opens the harness page and resolves with the guard status', async () => {
    installStub(verdict('allow'));
    const page = fakePage();
    await expect(startGuardPage(page, { url: 'http://127.0.0.1:1/harness.html', backend: 'wasm' })).resolves.toMatchObject({ state: 'ready', backend: 'wasm' });
    expect(page.visited).toEqual(['http://127.0.0.1:1/harness.html']);
  });

  it('expectBlocked returns a block verdict and throws with the verdict summary on an allow', async () => {
    installStub(verdict('block'));
    await expect(expectBlocked(fakePage(), INPUT)).resolves.toMatchObject({ decision: 'block' });
    installStub(verdict('allow'));
    await expect(expectBlocked(fakePage(), INPUT)).rejects.toThrow(/expected the call to be blocked, but the guard allowed it: decision=allow, reason=model/);
  });

  it('expectAllowed returns an allow verdict and throws on a block', async () => {
    installStub(verdict('allow'));
    await expect(expectAllowed(fakePage(), INPUT)).resolves.toMatchObject({ decision: 'allow' });
    installStub(verdict('block'));
    await expect(expectAllowed(fakePage(), INPUT)).rejects.toThrow(/expected the call to be allowed, but the guard blocked it/);
  });

  it('expectBlocked fails with the verdict when the block came from the failure policy, not the model', async () => {
    installStub(failurePolicyVerdict('block'));
    const error = await expectBlocked(fakePage(), INPUT).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toMatch(/expected the call to be blocked by the guard's model, but the guard failed \(timeout: the check took longer than 10000 ms\)/);
    expect((error as Error).message).toMatch(/decision=block, reason=failure-policy/);
    expect((error as Error).message).toMatch(/allowFailurePolicy: true/);
    // One full stop between the verdict's message and the advice.
    expect((error as Error).message).toMatch(/-> block\. Fix the setup/);
    expect((error as Error).message).not.toMatch(/\.\./);
  });

  it('expectAllowed fails when the allow came from the failure policy', async () => {
    installStub(failurePolicyVerdict('allow'));
    await expect(expectAllowed(fakePage(), INPUT)).rejects.toThrow(/expected the call to be allowed by the guard's model, but the guard failed.*reason=failure-policy/);
  });

  it('accepts a failure-policy decision when the test opts in with allowFailurePolicy', async () => {
    installStub(failurePolicyVerdict('block'));
    await expect(expectBlocked(fakePage(), INPUT, { allowFailurePolicy: true })).resolves.toMatchObject({ decision: 'block', reason: 'failure-policy' });
    installStub(failurePolicyVerdict('allow'));
    await expect(expectAllowed(fakePage(), INPUT, { allowFailurePolicy: true })).resolves.toMatchObject({ decision: 'allow', reason: 'failure-policy' });
  });

  it('rebuilds a guard failure in the page as a PageGuardError with its code and details', async () => {
    installStub({ code: 'integrity-mismatch' });
    const error = await checkInPage(fakePage(), INPUT).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PageGuardError);
    expect(error).toMatchObject({ code: 'integrity-mismatch', details: { file: 'onnx/model_q4.onnx' } });
    expect((error as Error).message).toMatch(/tampering/);
  });
});
