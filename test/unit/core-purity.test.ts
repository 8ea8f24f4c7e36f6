import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const CORE = join(import.meta.dirname, '../../src/core');
const FORBIDDEN = [/from ['"]node:/, /from ['"]onnxruntime/, /from ['"]@huggingface\//, /\bimportScripts\b/, /\bnew Worker\b/, /\b(?:document|window|self)\.[A-Za-z]/];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('src/core purity', () => {
  it('imports no DOM, Worker, node:*, onnxruntime or transformers modules', () => {
    for (const file of files(CORE)) {
      const text = readFileSync(file, 'utf8');
      for (const pattern of FORBIDDEN) expect(pattern.test(text), `${file} matches ${pattern}`).toBe(false);
    }
  });
});
