/** Machine-readable reason a MindGuard call could not run (a detection is a verdict, never one of these). */
export type MindGuardErrorCode = 'invalid-options' | 'invalid-input';

/** Thrown when MindGuard receives options or inputs it cannot work with; `details` survives structuredClone. */
export class MindGuardError extends Error {
  override readonly name = 'MindGuardError';
  readonly code: MindGuardErrorCode;
  readonly details: Readonly<Record<string, unknown>>;

  constructor(code: MindGuardErrorCode, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.code = code;
    this.details = details;
  }
}
