/**
 * Writes docs/options.md's options table from the option declarations (src/core/option-registry.ts,
 * src/core/runtime-options.ts, and each factory's own: src/page/options.ts, src/node/options.ts), between
 * its `options-table` markers. `--check` only says whether the page is current (exit 1 when not).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { optionsTable, type FactoryOptions } from '../src/cli/options-table.js';
import { NODE_OPTIONS } from '../src/node/options.js';
import { CLIENT_OPTIONS } from '../src/page/options.js';

/** The factories whose own options the table lists, in its order. */
const FACTORIES: readonly FactoryOptions[] = [
  { taker: '`createGuard`', options: CLIENT_OPTIONS },
  { taker: '`createNodeGuard`', options: NODE_OPTIONS },
];

const PAGE = fileURLToPath(new URL('../docs/options.md', import.meta.url));
const START = /<!-- options-table:start[^>]*-->\n/;
const END = '<!-- options-table:end -->';

/** The page with its options table replaced by the registry's. */
export function withOptionsTable(page: string): string {
  const start = START.exec(page);
  const end = page.indexOf(END);
  if (start === null || end < start.index) throw new Error('docs/options.md has no <!-- options-table:start ... --> / <!-- options-table:end --> markers');
  return `${page.slice(0, start.index + start[0].length)}${optionsTable(FACTORIES)}\n${page.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const page = readFileSync(PAGE, 'utf8');
  const current = withOptionsTable(page);
  if (process.argv.includes('--check')) {
    if (current !== page) {
      process.stderr.write('docs/options.md: the options table differs from src/core/option-registry.ts; run npm run docs:options\n');
      process.exit(1);
    }
  } else {
    writeFileSync(PAGE, current);
  }
}
