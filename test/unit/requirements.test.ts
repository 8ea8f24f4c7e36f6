/**
 * A suite that skips must not hide a missing part under CI: every conditional skip in test/ goes through
 * `requirement()` (test/requirements.ts), which throws under CI=true when the requirement is missing, and
 * no test is skipped unconditionally.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { requirement } from '../requirements.js';

const TEST_DIR = join(import.meta.dirname, '..');

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? (e.name === 'fixtures' ? [] : files(join(dir, e.name))) : e.name.endsWith('.ts') ? [join(dir, e.name)] : [],
  );
}

/** The text inside the parenthesis that opens at `open`, strings skipped. */
function argumentAt(text: string, open: number): string {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const ch = text[i]!;
    if (ch === "'" || ch === '"' || ch === '`') {
      for (i++; i < text.length && text[i] !== ch; i++) if (text[i] === '\\') i++;
    } else if (ch === '(') depth++;
    else if (ch === ')' && --depth === 0) return text.slice(open + 1, i);
  }
  throw new Error(`unbalanced parenthesis at ${open}`);
}

/** The condition with every `requirement(...)` call removed: what is left must be names bound to requirement(). */
function withoutRequirementCalls(condition: string): string {
  let out = condition;
  for (let at = out.indexOf('requirement('); at >= 0; at = out.indexOf('requirement(')) {
    const open = at + 'requirement'.length;
    out = out.slice(0, at) + out.slice(open + argumentAt(out, open).length + 2);
  }
  return out;
}

const sources = files(TEST_DIR).map((path) => ({ path: relative(TEST_DIR, path), text: readFileSync(path, 'utf8') }));
// Names bound to a requirement() anywhere in test/ (helpers export CAN_RUN, TINY_GUARD_MODEL_AVAILABLE).
const guarded = new Set(sources.flatMap((s) => [...s.text.matchAll(/const (\w+) = requirement\(/g)].map((m) => m[1]!)));

describe('skips that cannot hide a missing part', () => {
  const ci = process.env['CI'];
  afterEach(() => {
    if (ci === undefined) delete process.env['CI'];
    else process.env['CI'] = ci;
  });

  it('requirement() skips locally and throws under CI=true', () => {
    delete process.env['CI'];
    expect(requirement(false, 'Chromium')).toBe(false);
    expect(requirement(true, 'Chromium')).toBe(true);
    process.env['CI'] = 'true';
    expect(requirement(true, 'Chromium')).toBe(true);
    expect(() => requirement(false, 'Chromium')).toThrow(/CI=true but Chromium is missing/);
  });

  it('reads the skips of this repository (the scan finds them)', () => {
    expect(guarded).toContain('CAN_RUN');
    expect(guarded).toContain('TINY_GUARD_MODEL_AVAILABLE');
    expect(sources.filter((s) => /\.(skipIf|runIf)\(/.test(s.text)).length).toBeGreaterThan(20);
  });

  it('every skipIf/runIf condition in test/ goes through requirement(), and nothing is skipped unconditionally', () => {
    const unguarded: string[] = [];
    for (const { path, text } of sources) {
      if (path === 'unit/requirements.test.ts') continue;
      for (const m of text.matchAll(/\.(skipIf|runIf)\(/g)) {
        const condition = argumentAt(text, m.index + m[0].length - 1);
        const names = withoutRequirementCalls(condition).match(/(?<![.\w$])[A-Za-z_$][\w$]*/g) ?? [];
        const loose = names.filter((n) => !guarded.has(n));
        if (loose.length > 0) unguarded.push(`${path}: ${m[1]}(${condition}) uses ${loose.join(', ')} without requirement()`);
      }
      for (const m of text.matchAll(/\b(?:it|test|describe)\.(?:skip|todo)\(/g)) unguarded.push(`${path}: ${m[0]} skips unconditionally`);
    }
    expect(unguarded).toEqual([]);
  });
});
