/**
 * docs/options.md's options tables, from the declarations: the guard's options with their flag and
 * environment variable (the CLI's names for them), then the runtime's and each factory's own. The factories'
 * groups are given by the caller (scripts/options-table.ts), so this module imports neither shell.
 */
import { GUARD_OPTIONS, optionEntries } from '../core/options.js';
import { EXTERNAL_OPTIONS } from '../core/option-sources.js';
import type { OptionGroup, OptionLeaf } from '../core/option-schema.js';
import { RUNTIME_OPTIONS } from '../core/runtime-options.js';

/** One factory's own options and how the table names the factory (e.g. "`createGuard`"). */
export interface FactoryOptions {
  taker: string;
  options: OptionGroup;
}

/** The tables: the guard's options with flag and environment variable, then the runtime's (taken by both factories) and each factory's own. */
export function optionsTable(factories: readonly FactoryOptions[]): string {
  const external = new Map(EXTERNAL_OPTIONS.map((o) => [o.path.join('.'), o]));
  const shown = (leaf: OptionLeaf) => leaf.meta.defaultText ?? `\`${JSON.stringify(leaf.defaultValue)}\``;
  const meaning = (leaf: OptionLeaf) => leaf.meta.summary.replaceAll('|', '\\|');
  const rows = optionEntries(GUARD_OPTIONS).map(({ path, leaf }) => {
    const name = path.join('.');
    const o = external.get(name);
    const outside = o ? `\`--${o.flag}\`, \`${o.envNames[0]}\`` : '';
    return `| \`${name}\` | ${outside} | ${shown(leaf)} | ${meaning(leaf)} |`;
  });
  // A declaration two factories share (the backend, the model's location) is one row naming both.
  const where = new Map<OptionLeaf, { name: string; takers: string[] }>();
  const take = (declaration: OptionGroup, taker: string) => {
    for (const { path, leaf } of optionEntries(declaration)) {
      const row = where.get(leaf) ?? { name: path.join('.'), takers: [] };
      row.takers.push(taker);
      where.set(leaf, row);
    }
  };
  take(RUNTIME_OPTIONS, 'both');
  for (const factory of factories) take(factory.options, factory.taker);
  const runtimeRows = [...where].map(([leaf, { name, takers }]) => `| \`${name}\` | ${takers.join(', ')} | ${shown(leaf)} | ${meaning(leaf)} |`);
  return [
    '| option | flag, environment | default | meaning |',
    '| --- | --- | --- | --- |',
    ...rows,
    '',
    'How the model runs and where (the factories\' own options; `both`: createGuard and createNodeGuard):',
    '',
    '| option | taken by | default | meaning |',
    '| --- | --- | --- | --- |',
    ...runtimeRows,
  ].join('\n');
}
