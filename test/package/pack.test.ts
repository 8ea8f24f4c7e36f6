/**
 * The published package: `npm pack`, install the tarball in a fresh project, and import
 * `edgearmor`, `edgearmor/core` and `edgearmor/worker` with their types, as a user would.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const INSTALL_TIMEOUT_MS = 240_000;

describe('the npm package', () => {
  let dir: string;
  let tarball: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'edgearmor-pack-'));
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' });
    const info = JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
    tarball = join(dir, info[0]!.filename);
    // README "Install": the one setting a project needs where api.nuget.org (onnxruntime-node's CUDA files) is unreachable.
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module', allowScripts: { 'onnxruntime-node': false } }));
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: dir, stdio: 'pipe' });
  }, INSTALL_TIMEOUT_MS);

  // Removing the consumer's node_modules (onnxruntime, transformers.js) took over 10 s on a busy machine.
  afterAll(() => rmSync(dir, { recursive: true, force: true }), INSTALL_TIMEOUT_MS);

  it('ships the compiled entry points, their types and the embedded model', () => {
    const list = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
    for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/core/index.d.ts', 'dist/worker.d.ts', 'dist/testing.d.ts', 'dist/node.js', 'bin/edgearmor.js']) {
      expect(list).toContain(`package/${file}`);
    }
    expect(list).toMatch(/package\/public\/models\/edgearmor-proxy\/manifest\.json/);
    expect(list).not.toMatch(/package\/(src|test|model|data)\//);
  });

  it('imports ".", "./core", "./node" and "./testing" at run time in a fresh project', () => {
    const script = `
      const root = await import('edgearmor');
      const core = await import('edgearmor/core');
      const node = await import('edgearmor/node');
      const testing = await import('edgearmor/testing');
      console.log(JSON.stringify({
        testing: typeof testing.expectBlocked,
        root: typeof root.createGuard, local: typeof root.createLocalGuard,
        core: typeof core.computeAttribution, resolve: core.resolveOptions({}).tau,
        node: typeof node.createNodeGuard, embedded: node.embeddedModelDir().endsWith('edgearmor-proxy'),
      }));`;
    const out = execFileSync('node', ['--input-type=module', '-e', script], { cwd: dir, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ testing: 'function', root: 'function', local: 'function', core: 'function', resolve: -0.1, node: 'function', embedded: true });
  });

  it('type-checks a consumer that uses ".", "./core", "./worker" and "./testing" with strict settings', () => {
    writeFileSync(
      join(dir, 'consumer.ts'),
      `import { createGuard, type Guard, type Verdict } from 'edgearmor';
import { resolveOptions, type GuardInput } from 'edgearmor/core';
import type { GuardWorkerApi } from 'edgearmor/worker';
import { startGuardPage, expectBlocked, type PageLike } from 'edgearmor/testing';
const input: GuardInput = { messages: [{ role: 'user', content: 'hi' }], action: { name: 'x', arguments: {} } };
export async function run(guard: Guard): Promise<Verdict> { return guard.check(input); }
export const opts = resolveOptions({ tau: 0.5 });
export type Api = GuardWorkerApi;
export const make: typeof createGuard = createGuard;
export async function blocked(page: PageLike): Promise<Verdict> { await startGuardPage(page, { backend: 'wasm' }); return expectBlocked(page, input); }
`,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2022', 'DOM'], skipLibCheck: false, types: [] }, files: ['consumer.ts'] }),
    );
    const tsc = join(ROOT, 'node_modules', '.bin', 'tsc');
    const result = (() => {
      try {
        return execFileSync(tsc, ['-p', dir], { encoding: 'utf8' });
      } catch (e) {
        return String((e as { stdout?: string }).stdout ?? e);
      }
    })();
    expect(result).toBe('');
  });
});
