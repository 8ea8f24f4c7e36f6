/**
 * A model directory's guard-options.json in the pure core: which keys it may set, how its values are
 * judged (the guard's own option schema), and how it layers under the caller's options.
 */
import { describe, expect, it } from 'vitest';
import { ModelLoadError } from '../../src/core/errors.js';
import { applyModelOptions, MODEL_OPTION_PATHS, modelOptionsFileText, parseModelOptionsFile } from '../../src/core/model-options.js';
import { resolveOptions } from '../../src/core/options.js';

const file = (options: unknown, extra: Record<string, unknown> = {}) => ({ schema: 1, options, source: 'edgearmor adapt', created: '2026-11-25T10:00:00.000Z', ...extra });

function refusal(value: unknown): ModelLoadError {
  try {
    parseModelOptionsFile(value);
  } catch (e) {
    expect(e).toBeInstanceOf(ModelLoadError);
    return e as ModelLoadError;
  }
  throw new Error('parseModelOptionsFile accepted the file');
}

describe('parseModelOptionsFile', () => {
  it('accepts exactly the detection operating point (tau, userWeight, groupMargin, the description margins, the AIR thresholds, the unlikely-tool threshold) and the familiarity threshold', () => {
    expect(MODEL_OPTION_PATHS).toEqual([
      'tau',
      'userWeight',
      'groupMargin',
      'toolPoisoning.leaveOneOutMargin',
      'toolPoisoning.mindguard.airThreshold',
      'toolPoisoning.beforeToolResults.airThreshold',
      'toolPoisoning.beforeToolResults.leaveOneOutMargin',
      'familiarityThreshold',
      'unlikelyToolThreshold',
    ]);
    const options = { tau: 0.05, userWeight: 1.5, groupMargin: 0.1, toolPoisoning: { leaveOneOutMargin: -0.02 }, familiarityThreshold: -3.5 };
    expect(parseModelOptionsFile(file(options))).toEqual(file(options));
    const calibrated = { tau: -0.2, toolPoisoning: { mindguard: { airThreshold: 1.4 }, beforeToolResults: { airThreshold: 0.6, leaveOneOutMargin: 0.1 } } };
    expect(parseModelOptionsFile(file(calibrated))).toEqual(file(calibrated));
    expect(refusal(file({ toolPoisoning: { mindguard: { airThreshold: -1 } } })).message).toMatch(/Invalid option toolPoisoning\.mindguard\.airThreshold: received -1/);
    expect(parseModelOptionsFile(file({ tau: 0, unlikelyToolThreshold: -0.4 })).options).toEqual({ tau: 0, unlikelyToolThreshold: -0.4 });
    expect(refusal(file({ unlikelyToolThreshold: 'low' })).message).toMatch(/unlikelyToolThreshold: received "low"/);
    // An adapted model's: not measured.
    expect(parseModelOptionsFile(file({ tau: 0, familiarityThreshold: null }))).toEqual(file({ tau: 0, familiarityThreshold: null }));
    expect(refusal(file({ familiarityThreshold: '-3' })).message).toMatch(/Invalid option familiarityThreshold: received "-3"; allowed: /);
  });

  it('refuses any other option, naming the file, the key and what is allowed', () => {
    for (const [options, key] of [
      [{ tau: 0, rule: 'edgearmor' }, 'rule'],
      [{ trustedTools: ['read_file'] }, 'trustedTools'],
      [{ toolPoisoning: { attention: false } }, 'toolPoisoning.attention'],
      [{ toolPoisoning: 1 }, 'toolPoisoning'],
      [{ toolPoisoning: { mindguard: { sinkTopK: 10 } } }, 'toolPoisoning.mindguard.sinkTopK'],
    ] as const) {
      const e = refusal(file(options));
      expect(e.message).toContain('"guard-options.json"');
      expect(e.message).toContain(`option "${key}" cannot be set by a model directory; allowed: tau, userWeight, groupMargin, toolPoisoning.leaveOneOutMargin`);
      expect(e.details).toMatchObject({ file: 'guard-options.json', option: key });
    }
  });

  it('judges values with the guard option schema', () => {
    expect(refusal(file({ userWeight: -1 })).message).toMatch(/guard-options\.json.*Invalid option userWeight: received -1; allowed: a number >= 0/);
    expect(refusal(file({ tau: '0.1' })).message).toMatch(/Invalid option tau: received "0\.1"; allowed: a finite number/);
  });

  it('refuses another schema, unknown top-level keys and a missing options object', () => {
    expect(refusal(file({}, { schema: 2 })).message).toMatch(/schema is the number 2; this version reads schema 1/);
    expect(refusal(file({}, { tau: 0 })).message).toMatch(/unknown key "tau"; allowed: schema, options, source, created, calibration/);
    expect(refusal({ schema: 1 }).message).toMatch(/options is nothing/);
    expect(refusal([]).message).toMatch(/received an array of 0 items/);
  });
});

describe("a calibrated file's record of what its point was chosen on", () => {
  const calibration = { targetFpr: 0.05, injected: 120, benign: 140, realCalls: 100, tpr: 0.6, fpr: 0.05, rocAuc: 0.8 };

  it('is kept by the reader and reported in the status; a file without one (older files) still loads', () => {
    const parsed = parseModelOptionsFile(file({ tau: -0.2 }, { source: 'edgearmor calibrate', calibration }));
    expect(parsed.calibration).toEqual(calibration);
    expect(applyModelOptions({}, parsed).status).toEqual({ file: 'guard-options.json', source: 'edgearmor calibrate', created: '2026-11-25T10:00:00.000Z', calibration, applied: { tau: -0.2 }, overridden: [] });
    expect(parseModelOptionsFile({ schema: 1, options: { tau: 0 } })).toEqual({ schema: 1, options: { tau: 0 } });
    expect(JSON.parse(modelOptionsFileText({ tau: -0.2 }, { source: 'edgearmor calibrate', created: '2026-11-28T00:00:00.000Z', calibration }))).toEqual(file({ tau: -0.2 }, { source: 'edgearmor calibrate', created: '2026-11-28T00:00:00.000Z', calibration }));
  });

  it('refuses unknown keys and values that are not counts or rates', () => {
    expect(refusal(file({}, { calibration: { ...calibration, seed: 1 } })).message).toMatch(/unknown key "calibration\.seed"/);
    expect(refusal(file({}, { calibration: { ...calibration, tpr: '0.6' } })).message).toMatch(/calibration\.tpr is the string "0\.6"; allowed: a finite number >= 0/);
    expect(refusal(file({}, { calibration: 3 })).message).toMatch(/calibration is the number 3/);
  });
});

describe('applyModelOptions', () => {
  it('fills what the caller left unset and reports what the caller overrode', () => {
    const model = parseModelOptionsFile(file({ tau: 0.05, userWeight: 1.5, toolPoisoning: { leaveOneOutMargin: 0.2 } }));
    const { options, status } = applyModelOptions({ userWeight: 3, toolPoisoning: { attention: false } }, model);
    expect(status).toEqual({ file: 'guard-options.json', source: 'edgearmor adapt', created: '2026-11-25T10:00:00.000Z', applied: { tau: 0.05, 'toolPoisoning.leaveOneOutMargin': 0.2 }, overridden: ['userWeight'] });
    const resolved = resolveOptions(options);
    expect([resolved.tau, resolved.userWeight, resolved.toolPoisoning.leaveOneOutMargin, resolved.toolPoisoning.attention]).toEqual([0.05, 3, 0.2, false]);
  });

  it("carries an adapted model's null familiarity threshold over the default, and a caller's value over it", () => {
    const model = parseModelOptionsFile(file({ tau: 0.05, familiarityThreshold: null }));
    expect(resolveOptions({}).familiarityThreshold).toBe(-4.92);
    const applied = applyModelOptions({}, model);
    expect(applied.status.applied).toEqual({ tau: 0.05, familiarityThreshold: null });
    expect(resolveOptions(applied.options).familiarityThreshold).toBeNull();
    const caller = applyModelOptions({ familiarityThreshold: -6 }, model);
    expect(caller.status.overridden).toEqual(['familiarityThreshold']);
    expect(resolveOptions(caller.options).familiarityThreshold).toBe(-6);
  });

  it('lets a caller override a nested option without touching the model file', () => {
    const model = parseModelOptionsFile(file({ toolPoisoning: { leaveOneOutMargin: 0.2 } }));
    const caller = { toolPoisoning: { leaveOneOutMargin: 0 } };
    const { options, status } = applyModelOptions(caller, model);
    expect(status.overridden).toEqual(['toolPoisoning.leaveOneOutMargin']);
    expect(resolveOptions(options).toolPoisoning.leaveOneOutMargin).toBe(0);
    expect(model.options).toEqual({ toolPoisoning: { leaveOneOutMargin: 0.2 } });
  });
});

describe('modelOptionsFileText', () => {
  it('writes a file the reader accepts, and refuses what the reader would refuse', () => {
    const text = modelOptionsFileText({ tau: 0.05 }, { source: 'edgearmor adapt', created: '2026-11-25T10:00:00.000Z' });
    expect(parseModelOptionsFile(JSON.parse(text))).toEqual(file({ tau: 0.05 }));
    expect(() => modelOptionsFileText({ rule: 'edgearmor' } as never, { source: 'test' })).toThrow(/option "rule" cannot be set/);
  });
});
