/**
 * Writes the README's options table from the option registry (src/core/option-registry.ts), between
 * its `options-table` markers. `--check` only says whether the README is current (exit 1 when not).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { optionsTable } from '../src/cli/flags.js';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
const START = /<!-- options-table:start[^>]*-->\n/;
const END = '<!-- options-table:end -->';

/** The README with its options table replaced by the registry's. */
export function withOptionsTable(readme: string): string {
  const start = START.exec(readme);
  const end = readme.indexOf(END);
  if (start === null || end < start.index) throw new Error('README.md has no <!-- options-table:start ... --> / <!-- options-table:end --> markers');
  return `${readme.slice(0, start.index + start[0].length)}${optionsTable()}\n${readme.slice(end)}`;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const readme = readFileSync(README, 'utf8');
  const current = withOptionsTable(readme);
  if (process.argv.includes('--check')) {
    if (current !== readme) {
      process.stderr.write('README.md: the options table differs from src/core/option-registry.ts; run npm run docs:options\n');
      process.exit(1);
    }
  } else {
    writeFileSync(README, current);
  }
}
