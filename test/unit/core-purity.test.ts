import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const CORE = join(import.meta.dirname, '../../src/core');
const FORBIDDEN = [/from ['"]node:/, /from ['"]onnxruntime/, /from ['"]@huggingface\//, /\bimportScripts\b/, /\bnew Worker\b/, /\b(?:document|window|self)\.[A-Za-z]/];
// Packages the core may use: pure TypeScript that runs unchanged in a worker and in Node.
const ALLOWED_PACKAGES = ['valibot'];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? files(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Every module specifier a file imports or re-exports (type-only imports included: they still couple the layers). */
function specifiers(text: string): string[] {
  return [...text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+['"]([^'"]+)['"]/gms)].map((m) => m[1]!);
}

function resolveLocal(file: string, specifier: string): string {
  return resolve(dirname(file), specifier).replace(/\.js$/, '.ts');
}

describe('src/core purity', () => {
  it('imports no DOM, Worker, node:*, onnxruntime or transformers modules', () => {
    for (const file of files(CORE)) {
      const text = readFileSync(file, 'utf8');
      for (const pattern of FORBIDDEN) expect(pattern.test(text), `${file} matches ${pattern}`).toBe(false);
    }
  });

  it('imports nothing outside src/core (no engine, client or CLI module) but the pure packages it lists', () => {
    for (const file of files(CORE)) {
      for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
        if (specifier.startsWith('.')) {
          const target = relative(CORE, resolveLocal(file, specifier));
          expect(target.startsWith('..'), `${relative(CORE, file)} imports ${specifier}`).toBe(false);
        } else {
          expect(ALLOWED_PACKAGES, `${relative(CORE, file)} imports the package ${specifier}`).toContain(specifier);
        }
      }
    }
  });

  it('has no import cycle between its modules', () => {
    const graph = new Map(files(CORE).map((file) => [file, specifiers(readFileSync(file, 'utf8')).filter((s) => s.startsWith('.')).map((s) => resolveLocal(file, s))]));
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'visiting') {
        cycles.push([...path.slice(path.indexOf(file)), file].map((f) => relative(CORE, f)).join(' -> '));
        return;
      }
      state.set(file, 'visiting');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of graph.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
});

/** Value imports only: `import type` couples no behaviour. */
function valueSpecifiers(text: string): string[] {
  return [...text.matchAll(/^\s*(?:import|export)\s+(?!type\b)[^;]*?\bfrom\s+['"]([^'"]+)['"]/gms)].map((m) => m[1]!);
}

const SRC = join(import.meta.dirname, '../../src');
// The page's side of the worker guard (src/page) and the wire both sides speak (src/wire); src/worker is the worker's.
const PAGE = ['page', 'wire'].flatMap((dir) => files(join(SRC, dir))).map((f) => relative(SRC, f));

describe("a check's path enters the core once, as the conductor", () => {
  it('the page imports only the core and the scorer protocol (no engine module, no package)', () => {
    expect(PAGE).toEqual(expect.arrayContaining(['page/create-guard.ts', 'wire/protocol.ts']));
    for (const page of PAGE) {
      const file = join(SRC, page);
      for (const specifier of specifiers(readFileSync(file, 'utf8'))) {
        expect(specifier.startsWith('.'), `${page} imports the package ${specifier}`).toBe(true);
        const target = relative(SRC, resolveLocal(file, specifier));
        expect(target.startsWith('core/') || PAGE.includes(target), `${page} imports ${specifier}`).toBe(true);
      }
    }
  });

  it('no engine or shell module runs the judge, the planner or the failure policy itself: only the conductor does', () => {
    const outside = files(SRC).filter((f) => !f.startsWith(CORE + '/'));
    for (const file of outside) {
      for (const specifier of valueSpecifiers(readFileSync(file, 'utf8'))) {
        if (!specifier.startsWith('.')) continue;
        const target = relative(SRC, resolveLocal(file, specifier));
        expect(target, `${relative(SRC, file)} imports ${specifier}`).not.toBe('core/judge.ts');
      }
    }
  });

  it('among the engines only the loader makes a conductor, so no engine calls back into the core mid-check', () => {
    const engines = files(join(SRC, 'engine'));
    const makers = engines.filter((f) => valueSpecifiers(readFileSync(f, 'utf8')).some((s) => resolveLocal(f, s) === join(CORE, 'conductor.ts')));
    expect(makers.map((f) => relative(SRC, f))).toEqual(['engine/local-guard.ts']);
  });
});
