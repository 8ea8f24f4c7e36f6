import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const FIXTURE = join(ROOT, 'test/fixtures/adversarial.jsonl');
const EMBEDDED_MODEL = join(ROOT, 'public/models/edgearmor-proxy');
const CLI_TIMEOUT_MS = 120_000;

describe('edgearmor eval', () => {
  it('rejects bad input with a one-line error and exit status 2 before loading a model', () => {
    const r = spawnSync(NODE, [CLI, 'eval', FIXTURE, '--limit', 'x', '--model', '/nonexistent'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toEqual(['edgearmor: --limit: received "x"; allowed: an integer >= 1']);
    const b = spawnSync(NODE, [CLI, 'eval', FIXTURE, '--baselines', 'oracle'], { encoding: 'utf8' });
    expect(b.status).toBe(2);
    expect(b.stderr).toContain('allowed: regex, reference, never, always, none');
  });

  it('prints the summary object as the last line with --json, on the embedded model', () => {
    const out = mkdtempSync(join(tmpdir(), 'edgearmor-eval-cli-'));
    const stdout = execFileSync(NODE, [CLI, 'eval', FIXTURE, '--limit', '6', '--seed', '2', '--model', EMBEDDED_MODEL, '--out', out, '--json'], {
      encoding: 'utf8',
      timeout: CLI_TIMEOUT_MS,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    const summary = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(summary).toMatchObject({ n: 6, method: 'edgearmor' });
    for (const k of ['tpr', 'fpr', 'roc_auc', 'average_precision', 'attribution_accuracy', 'by_suite', 'methods']) expect(summary).toHaveProperty(k);
    expect(Object.keys(summary['methods'] as object)).toEqual(['edgearmor', 'edgearmor/mindguard', 'edgearmor/description-loo', 'edgearmor/point', 'regex', 'reference-causalarmor', 'never-flag', 'always-flag']);
    expect(existsSync(join(out, 'report.html'))).toBe(true);
  }, CLI_TIMEOUT_MS);
});
