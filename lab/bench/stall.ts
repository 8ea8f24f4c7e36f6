/** The event-loop stall meter the benchmark, the soak and the slow-input tests share (no other imports: a soak or test loads nothing else with it). */

/**
 * Starts a 5 ms ticker; `stop()` ends it and returns the longest the event loop went without running it
 * (between two ticks, or from the last tick to the stop): how long the host (a page, an agent's Node
 * process) could not answer anything. monitorEventLoopDelay samples on a timer and can miss one long
 * block; the ticker measures the gaps directly. The ticker never keeps a process alive.
 */
export function startStallMeter(): { stop(): number } {
  let last = performance.now();
  let longest = 0;
  const ticker = setInterval(() => {
    const t = performance.now();
    longest = Math.max(longest, t - last);
    last = t;
  }, 5);
  (ticker as { unref?: () => void }).unref?.();
  return {
    stop() {
      clearInterval(ticker);
      return Math.max(longest, performance.now() - last);
    },
  };
}
