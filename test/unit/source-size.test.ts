import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '../../src');
// A file past this is doing more than one thing.
const MAX_LINES = 400;
const EXEMPT: string[] = [];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return EXEMPT.includes(relative(SRC, path)) ? [] : files(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

describe('source layout', () => {
  it(`keeps every file under src/ within ${MAX_LINES} lines`, () => {
    const long = files(SRC)
      .map((file) => ({ file: relative(SRC, file), lines: readFileSync(file, 'utf8').split('\n').length }))
      .filter((f) => f.lines > MAX_LINES);
    expect(long).toEqual([]);
  });
});
