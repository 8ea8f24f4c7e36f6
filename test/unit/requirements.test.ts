import { afterEach, describe, expect, it, vi } from 'vitest';
import { requirement } from '../requirements.js';

describe('suite requirements', () => {
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('runs a suite whose requirement is present, and skips it locally when it is missing', () => {
    vi.stubEnv('CI', '');
    expect(requirement(true, 'the embedded model')).toBe(true);
    expect(requirement(false, 'the embedded model')).toBe(false);
  });

  it('fails instead of skipping under CI when the requirement is missing', () => {
    vi.stubEnv('CI', 'true');
    expect(requirement(true, 'Chromium')).toBe(true);
    expect(() => requirement(false, 'Chromium')).toThrow(/CI=true but Chromium is missing/);
  });
});
