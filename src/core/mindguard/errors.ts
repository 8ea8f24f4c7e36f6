/** Machine-readable reason a MindGuard call could not run (a detection is a verdict, never one of these). */
export type MindGuardErrorCode = 'invalid-options' | 'invalid-input';

export { MindGuardError } from '../errors.js';
