/**
 * Suites that need the embedded model or Chromium skip on a checkout without them, but under CI
 * (CI=true) a missing requirement fails the run: a green CI must mean those suites ran.
 */

/** Whether a suite's requirement is here: true runs it, false skips it locally and throws under CI. */
export function requirement(present: boolean, what: string): boolean {
  if (!present && process.env['CI'] === 'true') {
    throw new Error(`CI=true but ${what} is missing, so this suite cannot run; under CI it must (unset CI to skip it locally).`);
  }
  return present;
}
