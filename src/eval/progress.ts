/**
 * A progress bar on stderr: redrawn in place on a TTY, plain lines (about every 5%) otherwise so
 * logs and CI output stay readable.
 */

/** Where the bar writes; process.stderr in the CLI. */
export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

/** A progress reporter for a known number of steps. */
export interface Progress {
  tick(label?: string): void;
  done(): void;
}

function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s}s` : `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** Creates a progress bar over `total` steps; `now` is injectable for tests. */
export function createProgress(total: number, stream: ProgressStream, title = 'eval', now: () => number = Date.now): Progress {
  const start = now();
  let count = 0;
  let lastPlain = -1;
  const line = (label: string): string => {
    const elapsed = now() - start;
    const eta = count === 0 ? 0 : (elapsed / count) * (total - count);
    const pct = total === 0 ? 100 : Math.floor((100 * count) / total);
    return `${title} ${count}/${total} ${pct}% ${duration(elapsed)} elapsed, eta ${duration(eta)}${label ? ` ${label}` : ''}`;
  };
  return {
    tick(label = '') {
      count++;
      if (stream.isTTY) {
        const width = 24;
        const filled = total === 0 ? width : Math.round((width * count) / total);
        const text = `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${line(label)}`;
        stream.write(`\r${text.slice(0, Math.max(20, (stream.columns ?? 100) - 1)).padEnd(Math.min(stream.columns ?? 100, 120) - 1)}`);
        return;
      }
      const step = Math.max(1, Math.ceil(total / 20));
      if (count === total || count - lastPlain >= step) {
        lastPlain = count;
        stream.write(`${line(label)}\n`);
      }
    },
    done() {
      if (stream.isTTY) stream.write('\n');
    },
  };
}
