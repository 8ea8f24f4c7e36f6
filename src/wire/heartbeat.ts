/**
 * The worker guard's heartbeat: while calls are in flight, the client pings the worker, and a
 * worker that leaves a ping unanswered for `timeoutMs` is treated as crashed. A browser Worker that
 * dies without an `error` event (killed for memory, closed from inside) gives no exit event either,
 * so without this its calls would wait until their own `timeoutMs`.
 */

import { InvalidOptionsError } from '../core/errors.js';

/** What the heartbeat needs from a worker session. */
export interface HeartbeatTarget {
  /** A round trip to the worker (any cheap call). */
  ping(): Promise<unknown>;
  /** Whether the heartbeat should run now: the session is alive and has calls in flight. */
  active(): boolean;
  /** Whether the session is gone for good (the heartbeat then stops itself). */
  dead(): boolean;
  /** Called once, when a ping stayed unanswered for `timeoutMs`. */
  onSilent(silentMs: number): void;
}

/** Starts the heartbeat of one session; returns a function that stops it. */
export function startHeartbeat(target: HeartbeatTarget, options: { intervalMs: number; timeoutMs: number }): () => void {
  let outstandingSince: number | null = null;
  let stopped = false;
  const now = () => globalThis.performance?.now() ?? Date.now();
  const timer = setInterval(() => {
    if (stopped) return;
    if (target.dead()) return stop();
    if (!target.active()) {
      outstandingSince = null;
      return;
    }
    if (outstandingSince !== null) {
      const silentMs = now() - outstandingSince;
      if (silentMs >= options.timeoutMs) {
        stop();
        target.onSilent(Math.round(silentMs));
      }
      return;
    }
    const sent = now();
    outstandingSince = sent;
    target.ping().then(
      () => {
        if (outstandingSince === sent) outstandingSince = null;
      },
      // A failed round trip is the crash path's business (it rejects through the same connection).
      () => undefined,
    );
  }, options.intervalMs);
  // A heartbeat must never keep a Node host alive on its own.
  (timer as { unref?: () => void }).unref?.();
  function stop(): void {
    stopped = true;
    clearInterval(timer);
  }
  return stop;
}

/** The heartbeat's timing for createGuard's `heartbeatTimeoutMs` (null: off): pings at a quarter of the timeout, at most every second. */
export function heartbeatOptions(timeoutMs: number | null | undefined, defaultTimeoutMs = 15_000): { intervalMs: number; timeoutMs: number } | null {
  if (timeoutMs === null) return null;
  const t = timeoutMs ?? defaultTimeoutMs;
  if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) {
    throw new InvalidOptionsError(`Invalid option heartbeatTimeoutMs: received ${String(timeoutMs)}; allowed: a finite number of milliseconds > 0, or null to turn the heartbeat off.`, { option: 'heartbeatTimeoutMs' });
  }
  return { intervalMs: Math.max(1, Math.min(1_000, Math.floor(t / 4))), timeoutMs: t };
}
