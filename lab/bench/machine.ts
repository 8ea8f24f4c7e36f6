/** The machine a benchmark ran on, as every results file names it: CPU model, cores, memory, Node. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

export function machine(): string {
  const cpu = readFileSync('/proc/cpuinfo', 'utf8').match(/model name\s*:\s*(.*)/)?.[1] ?? 'unknown CPU';
  const mem = Math.round(Number(readFileSync('/proc/meminfo', 'utf8').match(/MemTotal:\s*(\d+)/)?.[1] ?? 0) / 2 ** 20);
  const cores = Number(execFileSync('nproc').toString().trim());
  return `${cpu}, ${cores} cores, ${mem} GiB RAM, no GPU, Node ${process.version}`;
}
