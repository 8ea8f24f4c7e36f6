/**
 * Vitest global setup: every temporary directory the tests make (os.tmpdir()) goes under one root that is
 * removed when the run ends, so no run leaves its fixtures, guards' model copies or CLI outputs in /tmp.
 * The workers, the CLIs they spawn and Chromium inherit TMPDIR.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const root = mkdtempSync(join(tmpdir(), 'edgearmor-tests-'));
  process.env['TMPDIR'] = root;
  return () => rmSync(root, { recursive: true, force: true });
}
