#!/usr/bin/env node
// The package's command; runs the compiled CLI (`npm pack` builds dist/ through "prepack"; a clone of the
// repository builds it with `npm run build:lib`, since an install script would be listed on every user's install).
import { existsSync } from 'node:fs';

const cli = new URL('../dist/cli/edgearmor.js', import.meta.url);
if (!existsSync(cli)) {
  process.stderr.write('edgearmor: dist/ is not built here (a clone of the repository): run npm run build:lib first\n');
  process.exit(2);
}
const { main } = await import(cli.href);
await main(process.argv.slice(2));
