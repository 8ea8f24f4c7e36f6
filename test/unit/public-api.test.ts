/**
 * The package's public API is the list in docs/api.md: each entry of package.json's `exports` exports
 * exactly the names its section lists, each of the kind it says (type, or a run-time function, class or
 * const). Read from the entries' sources with TypeScript's checker, so type-only exports count too.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
// One TypeScript program over every entry's sources: seconds alone, more on a busy machine.
const PROGRAM_TIMEOUT_MS = 120_000;

type Kind = 'function' | 'class' | 'const' | 'type';
const KINDS: readonly string[] = ['function', 'class', 'const', 'type'];

interface DocumentedEntry {
  names: Map<string, Kind>;
  /** Entries whose every export this one also exports ("Everything `edgearmor/core` exports"). */
  includes: string[];
}

/** docs/api.md's sections: `## \`entry\`` headings, table rows "| `name` | kind | ... |", include lines. */
function parseApiDoc(text: string): Map<string, DocumentedEntry> {
  const entries = new Map<string, DocumentedEntry>();
  let current: DocumentedEntry | null = null;
  for (const line of text.split('\n')) {
    const heading = /^## `([^`]+)`\s*$/.exec(line);
    if (heading) {
      current = { names: new Map(), includes: [] };
      entries.set(heading[1]!, current);
      continue;
    }
    if (line.startsWith('## ')) current = null;
    if (!current) continue;
    const include = /^Everything `([^`]+)` exports/.exec(line);
    if (include) current.includes.push(include[1]!);
    const row = /^\| `([^`]+)` \| (\w+) \|/.exec(line);
    if (row) {
      if (!KINDS.includes(row[2]!)) throw new Error(`docs/api.md: ${row[1]} has kind "${row[2]}"; allowed: ${KINDS.join(', ')}`);
      if (current.names.has(row[1]!)) throw new Error(`docs/api.md: ${row[1]} is listed twice in one entry`);
      current.names.set(row[1]!, row[2] as Kind);
    }
  }
  return entries;
}

function expand(entry: string, documented: Map<string, DocumentedEntry>): Map<string, Kind> {
  const own = documented.get(entry);
  if (!own) return new Map();
  const all = new Map<string, Kind>();
  for (const included of own.includes) for (const [name, kind] of expand(included, documented)) all.set(name, kind);
  for (const [name, kind] of own.names) all.set(name, kind);
  return all;
}

function kindOf(symbol: ts.Symbol, checker: ts.TypeChecker): Kind {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  if (target.flags & ts.SymbolFlags.Class) return 'class';
  if (target.flags & ts.SymbolFlags.Function) return 'function';
  if (target.flags & ts.SymbolFlags.Variable) return 'const';
  return 'type';
}

/** The package's entries ("edgearmor/core") with the source file each one's built file comes from. */
function packageEntries(): Map<string, string> {
  const pkg = JSON.parse(readFileSync(resolve(ROOT, 'package.json'), 'utf8')) as { name: string; exports: Record<string, string | { default: string }> };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(pkg.exports)) {
    if (typeof target === 'string') continue; // ./package.json
    const name = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    entries.set(name, resolve(ROOT, target.default.replace(/^\.\/dist\//, 'src/').replace(/\.js$/, '.ts')));
  }
  return entries;
}

describe('the public API (docs/api.md)', () => {
  const documented = parseApiDoc(readFileSync(resolve(ROOT, 'docs/api.md'), 'utf8'));
  const entries = packageEntries();
  const exported = new Map<string, Map<string, Kind>>();

  beforeAll(() => {
    const config = ts.getParsedCommandLineOfConfigFile(resolve(ROOT, 'tsconfig.build.json'), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} });
    if (!config) throw new Error('tsconfig.build.json did not parse');
    const program = ts.createProgram([...entries.values()], { ...config.options, noEmit: true });
    const checker = program.getTypeChecker();
    for (const [entry, file] of entries) {
      const source = program.getSourceFile(file);
      if (!source) throw new Error(`${entry}: its source ${file} is not in the program`);
      const moduleSymbol = checker.getSymbolAtLocation(source);
      const symbols = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
      exported.set(entry, new Map(symbols.map((s) => [s.name, kindOf(s, checker)])));
    }
  }, PROGRAM_TIMEOUT_MS);

  it("documents every entry of package.json's exports, and no other", () => {
    expect([...documented.keys()].sort()).toEqual([...entries.keys()].sort());
  });

  it.each([...entries.keys()])('%s exports exactly what docs/api.md lists, each of the kind it says', (entry) => {
    const listed = expand(entry, documented);
    const actual = exported.get(entry)!;
    const undocumented = [...actual.keys()].filter((n) => !listed.has(n)).sort();
    const missing = [...listed.keys()].filter((n) => !actual.has(n)).sort();
    const wrongKind = [...listed].filter(([n, k]) => actual.has(n) && actual.get(n) !== k).map(([n, k]) => `${n}: listed ${k}, is ${actual.get(n)}`);
    expect({ undocumented, missing, wrongKind }).toEqual({ undocumented: [], missing: [], wrongKind: [] });
  });

  it('reads the list as written: the core section has its types and functions, the worker none', () => {
    expect(expand('edgearmor/core', documented).get('Verdict')).toBe('type');
    expect(expand('edgearmor/core', documented).get('resolveOptions')).toBe('function');
    expect(expand('edgearmor', documented).get('mcpGuardInput')).toBe('function');
    expect(expand('edgearmor/worker', documented).size).toBe(0);
  });
});
