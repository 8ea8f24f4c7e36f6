/**
 * The one deadline of a call: `timeoutMs` and the caller's AbortSignal folded into one signal whose
 * reason is the typed error the call answers with (GuardTimeoutError or GuardAbortedError). The
 * conductor stops its model work with it; the worker client stops waiting for the worker with it.
 */
import { GuardAbortedError, GuardTimeoutError } from './errors.js';

/** A running deadline: `signal` aborts at the first of the timeout and the caller's abort. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** Rejects with the signal's reason when it aborts; never resolves. */
  readonly expired: Promise<never>;
  /** Stops the timer and lets go of the caller's signal; call it when the call settles. */
  clear(): void;
}

/** The error a call gets when it outlives `timeoutMs`. */
export function timeoutError(timeoutMs: number): GuardTimeoutError {
  return new GuardTimeoutError(`The check took longer than timeoutMs = ${timeoutMs}.`, { timeoutMs });
}

/** The error a call gets when its caller aborts it. */
export function abortedError(): GuardAbortedError {
  return new GuardAbortedError('The check was aborted by the caller.');
}

/** Starts a call's deadline: after `timeoutMs` (null: none) or on the caller's abort, whichever is first. */
export function startDeadline(timeoutMs: number | null, callerSignal?: AbortSignal): Deadline {
  const controller = new AbortController();
  let rejectExpired: (reason: unknown) => void = () => undefined;
  const expired = new Promise<never>((_, reject) => (rejectExpired = reject));
  expired.catch(() => undefined);
  const stop = (reason: Error) => {
    if (controller.signal.aborted) return;
    controller.abort(reason);
    rejectExpired(reason);
  };
  const timer = timeoutMs === null ? undefined : setTimeout(() => stop(timeoutError(timeoutMs)), timeoutMs);
  const onAbort = () => stop(abortedError());
  if (callerSignal?.aborted) onAbort();
  else callerSignal?.addEventListener('abort', onAbort, { once: true });
  return {
    signal: controller.signal,
    expired,
    clear() {
      clearTimeout(timer);
      callerSignal?.removeEventListener('abort', onAbort);
    },
  };
}
