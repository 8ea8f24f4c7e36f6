/**
 * The `edgearmor` command as the CLI tests run it: the package's own bin/edgearmor.js on the compiled dist/, as a
 * user's `npx edgearmor` does. Run through tsx on src/ instead, every spawn loaded the TypeScript compiler's hooks
 * and the sources through them again, which cost more CPU than many of the commands themselves.
 *
 * `npm test` compiles dist/ before the suite; a test file run on its own after editing src/ must not test the
 * old build, so {@link CLI} refuses a dist/ older than any source file.
 */
import { readdirSync, statSync } from 'node:fs';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const BUILT = join(ROOT, 'dist/cli/edgearmor.js');

/** The newest modification time of the compiled sources (src/ less the demo app, which tsconfig.build.json leaves out). */
function newestSource(): number {
  const src = join(ROOT, 'src');
  return readdirSync(src, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts') && !file.startsWith(`demo${sep}`))
    .reduce((newest, file) => Math.max(newest, statSync(join(src, file)).mtimeMs), 0);
}

function builtCli(): string {
  let built: number;
  try {
    built = statSync(BUILT).mtimeMs;
  } catch {
    throw new Error('dist/ is not built: run `npm run build:lib` (npm test builds it before the suite)');
  }
  if (built < newestSource()) throw new Error('dist/ is older than src/: run `npm run build:lib` so the CLI tests run the code as it is');
  return join(ROOT, 'bin/edgearmor.js');
}

/** This Node, to run {@link CLI} with: `spawnSync(NODE, [CLI, 'check', file])`. */
export const NODE = process.execPath;

/** bin/edgearmor.js, checked to run a dist/ built from the sources as they are. */
export const CLI = builtCli();
