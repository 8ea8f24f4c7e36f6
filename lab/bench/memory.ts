/**
 * Peak process memory of one piece of work, for the Node harnesses (run.ts, dawn.ts). onnxruntime-node and
 * onnxruntime-web's wasm run synchronously on the calling thread, so a timer sampling RSS never fires during
 * a run and misses its peak; Linux keeps the process's RSS high-water mark (VmHWM), which can be reset.
 */
import { readFileSync, writeFileSync } from 'node:fs';

/** How often the fallback samples RSS, where the high-water mark cannot be reset. */
const RSS_SAMPLE_MS = 1;

/** Resets the process's RSS high-water mark; returns a reader of it (bytes), or undefined where /proc cannot. */
function resetPeakRss(): (() => number) | undefined {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    const hwm = () => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]) * 1024;
    return Number.isFinite(hwm()) ? hwm : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Peak RSS (MiB) while `fn` runs, above the level just before it: the kernel's high-water mark, reset first,
 * so a peak inside a synchronous native call counts; where that is unavailable, RSS sampled every 1 ms
 * (which sees only what is still held when the event loop gets a turn).
 */
export async function peakRssDelta(fn: () => Promise<unknown>): Promise<number> {
  (globalThis as { gc?: () => void }).gc?.();
  const base = process.memoryUsage.rss();
  const peakSinceReset = resetPeakRss();
  let peak = base;
  const timer = peakSinceReset ? undefined : setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), RSS_SAMPLE_MS);
  try {
    await fn();
  } finally {
    clearInterval(timer);
  }
  peak = Math.max(peak, process.memoryUsage.rss(), peakSinceReset?.() ?? 0);
  return (peak - base) / 2 ** 20;
}
