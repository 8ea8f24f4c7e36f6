/**
 * Vitest global setup: every temporary directory the tests make (os.tmpdir()) goes under one root that is
 * removed when the run ends, so no run leaves its fixtures, guards' model copies or CLI outputs in /tmp.
 * The workers, the CLIs they spawn and Chromium inherit TMPDIR. Each project runs the global setup; the
 * first makes the root and the others keep it. The name stays short: Chromium's profile socket lives
 * under TMPDIR, and a Unix socket path has at most 107 bytes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MARK = 'EDGEARMOR_TESTS_TMPDIR';

export default function setup(): () => void {
  if (process.env[MARK] !== undefined) return () => {};
  const root = mkdtempSync(join(tmpdir(), 'ea-'));
  process.env[MARK] = root;
  process.env['TMPDIR'] = root;
  return () => rmSync(root, { recursive: true, force: true });
}
