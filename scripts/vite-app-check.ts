/**
 * docs/browser.md's "Your Vite app in five minutes", followed word for word from the packed tarball: the real
 * `create-vite` vanilla-ts template (its `tsc && vite build`, with noUnusedLocals), the recipe's shell lines, vite.config.ts
 * and src/main.ts taken from docs/browser.md itself, then the page in the system
 * Chromium (SwiftShader's WebGPU adapter, so `backend: 'auto'` must pick WASM) under `npm run dev` AND under
 * `vite preview` of the build. Exits 0 when both show a model verdict on the page and print it (the recipe's
 * console.log line) with no console errors and no request off 127.0.0.1, npm install named no install script
 * left unreviewed, the build printed no warning, and it holds one copy of each runtime wasm file.
 *
 * Slow (an install and a build, ~3 minutes), hence a script beside `npm test`: `npx tsx scripts/vite-app-check.ts`.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ORT_RUNTIME_FILES } from '../src/vite.js';
import { keepOffline, launchChromium, watchConsole, type BrowserHandle } from '../test/browser/browser-helpers.js';

const ROOT = resolve(import.meta.dirname, '..');
// The template's own generator, pinned: its package.json, tsconfig.json and index.html are what a user starts from.
const CREATE_VITE_VERSION = '9.3.0';
const PAGE_TIMEOUT_MS = 180_000;
// The recipe's console.log line: backend, where the verdict came from, decision.
const VERDICT_LINE = /^(wasm|webgpu) (model|failure-policy) (block|allow)\b/;
// What the recipe's page shows in #app once the verdict is in.
const PAGE_TEXT = /^send_money: (block|allow) \(decided by: (model|failure-policy); flagged: ([^;]+); on (wasm|webgpu)\)$/;
const CREATE_LINE = 'npm create vite@latest my-app -- --template vanilla-ts && cd my-app';
const INSTALL_LINE = 'npm install edgearmor';

/** The code block right after the line naming `file` in docs/browser.md's recipe. */
function recipeFile(file: string): string {
  const doc = readFileSync(join(ROOT, 'docs/browser.md'), 'utf8');
  const at = doc.indexOf(`\`${file}\`:`);
  const block = at < 0 ? null : /```ts\n([\s\S]*?)```/.exec(doc.slice(at));
  if (!block) throw new Error(`docs/browser.md has no ts block after \`${file}\`:`);
  return block[1]!;
}

/** The recipe's shell lines after the create-vite line (which this script runs pinned): each runs in the app as written, the install from the tarball. */
function recipeShellLines(): string[] {
  const doc = readFileSync(join(ROOT, 'docs/browser.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(doc.slice(doc.indexOf('## Your Vite app in five minutes')));
  const lines = block?.[1]!.trim().split('\n') ?? [];
  if (lines[0] !== CREATE_LINE || lines[lines.length - 1] !== INSTALL_LINE) {
    throw new Error(`docs/browser.md's recipe: expected its sh block to open with "${CREATE_LINE}" and end with "${INSTALL_LINE}", received: ${lines.join(' | ')}`);
  }
  return lines.slice(1, -1);
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => done(port));
    });
    s.on('error', fail);
  });
}

/** Opens the app at `url` and waits for the recipe's verdict line; throws on a failure-policy verdict, a console error or a request off 127.0.0.1. */
async function checkPage(browser: BrowserHandle, url: string, label: string): Promise<void> {
  const external = await keepOffline(browser.context);
  const page = await browser.context.newPage();
  const errors = watchConsole(page);
  const lines: string[] = [];
  page.on('console', (message) => lines.push(message.text()));
  for (let i = 0; ; i++) {
    try {
      await page.goto(url);
      break;
    } catch (e) {
      if (i > 30) throw e;
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  const deadline = Date.now() + PAGE_TIMEOUT_MS;
  while (!lines.some((l) => VERDICT_LINE.test(l)) && errors.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  const line = lines.find((l) => VERDICT_LINE.test(l));
  process.stdout.write(`${label}: ${line ?? '(no verdict line)'}\n`);
  if (errors.length > 0) throw new Error(`${label}: console errors: ${errors.join(' | ')}`);
  if (line === undefined) throw new Error(`${label}: no verdict within ${PAGE_TIMEOUT_MS} ms; console: ${lines.join(' | ')}`);
  if (VERDICT_LINE.exec(line)![2] !== 'model') throw new Error(`${label}: the verdict came from the failure policy, not the model: ${line}`);
  const shown = (await page.locator('#app').textContent())?.trim() ?? '';
  process.stdout.write(`${label}, on the page: ${shown}\n`);
  const onPage = PAGE_TEXT.exec(shown);
  if (!onPage || onPage[1] !== VERDICT_LINE.exec(line)![3]) throw new Error(`${label}: the page does not show the verdict the console printed (${line}); #app reads: ${shown}`);
  if (external.length > 0) throw new Error(`${label}: requests off 127.0.0.1: ${external.join(', ')}`);
  await page.close();
}

/** Runs `npm run <script>` with a port, checks the page it serves, and stops it. */
async function serveAndCheck(app: string, script: 'dev' | 'preview', browser: BrowserHandle): Promise<void> {
  const port = await freePort();
  const server = spawn('npm', ['run', script, '--', '--host', '127.0.0.1', '--port', String(port), '--strictPort'], { cwd: app, stdio: 'inherit', detached: true });
  try {
    await checkPage(browser, `http://127.0.0.1:${port}/`, `npm run ${script}`);
  } finally {
    if (server.pid) process.kill(-server.pid);
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'edgearmor-vite-app-'));
  try {
    const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8' });
    const tarball = join(dir, (JSON.parse(out.slice(out.indexOf('['))) as Array<{ filename: string }>)[0]!.filename);
    execFileSync('npx', ['--yes', `create-vite@${CREATE_VITE_VERSION}`, 'my-app', '--template', 'vanilla-ts'], { cwd: dir, stdio: ['ignore', 'inherit', 'inherit'] });
    const app = join(dir, 'my-app');
    // The recipe's shell lines between create-vite and the install (plain words, no quoting), then its two files.
    for (const line of recipeShellLines()) {
      const [command, ...args] = line.split(/\s+/);
      execFileSync(command!, args, { cwd: app, stdio: 'inherit' });
    }
    writeFileSync(join(app, 'vite.config.ts'), recipeFile('vite.config.ts'));
    writeFileSync(join(app, 'src', 'main.ts'), recipeFile('src/main.ts'));
    const install = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], { cwd: app, encoding: 'utf8' });
    process.stdout.write(install.stdout + install.stderr);
    if (install.status !== 0) throw new Error(`npm install of the tarball failed: ${install.stderr}`);
    if (existsSync(join(app, 'node_modules', 'onnxruntime-node'))) throw new Error('a browser app installed onnxruntime-node: it must stay an optional peer dependency');
    // npm names each dependency whose install scripts no allowScripts entry covers; the recipe's line must cover them
    // all (edgearmor has none: its build runs at `npm pack`).
    const installOutput = install.stdout + install.stderr;
    const listed = [...installOutput.matchAll(/^npm warn install-scripts +(\S+)@\S+ \((\w+):/gm)];
    if (listed.length === 0 && /install-scripts/.test(installOutput)) throw new Error('npm install warned about install scripts in a form this check does not read (above)');
    const unreviewed = listed.map(([, name, script]) => `${name} (${script})`);
    if (unreviewed.length > 0) throw new Error(`npm install named install scripts the recipe's allowScripts line does not cover: ${unreviewed.join(', ')}`);
    const build = spawnSync('npm', ['run', 'build'], { cwd: app, encoding: 'utf8' });
    process.stdout.write(build.stdout);
    if (build.status !== 0) throw new Error(`npm run build (tsc && vite build) failed: ${build.stderr}`);
    // Vite writes its warnings (externalized Node built-ins, ineffective dynamic imports...) to stderr.
    if (build.stderr.trim() !== '') throw new Error(`npm run build warned: ${build.stderr}`);
    const wasm = execFileSync('find', ['dist', '-name', '*.wasm'], { cwd: app, encoding: 'utf8' }).trim().split('\n').sort();
    process.stdout.write(`wasm files in dist: ${wasm.join(', ')}\n`);
    const expected = ORT_RUNTIME_FILES.filter((f) => f.endsWith('.wasm')).map((f) => `dist/ort/${f}`).sort();
    if (wasm.join() !== expected.join()) throw new Error(`expected one copy of each runtime wasm file the plugin copies (${expected.join(', ')}), found: ${wasm.join(', ')}`);

    const browser = await launchChromium();
    try {
      await serveAndCheck(app, 'dev', browser);
      await serveAndCheck(app, 'preview', browser);
      process.stdout.write('vite-app-check: the docs/browser.md recipe works from the packed tarball in dev and in the build\n');
    } finally {
      await browser.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
