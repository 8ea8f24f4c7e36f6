/**
 * The command line's edges a user meets first: a file saved with a byte-order mark, every guard option
 * as a flag (--timeout-ms), a manifest that pins nothing, a standard output that cannot be written, one
 * that is closed, and one whose reader goes away.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCases } from '../../src/cli/case-file.js';
import { guardOptionsFrom } from '../../src/cli/flags.js';
import { ModelLoadError } from '../../src/core/errors.js';
import { optionsFromEnv } from '../../src/core/options.js';
import { loadModelFiles } from '../../src/engine/model-files.js';
import { CLI, NODE } from '../cli.js';

const ROOT = join(import.meta.dirname, '../..');
const CLI_TIMEOUT_MS = 120_000;
const CASE = {
  messages: [
    { role: 'user', content: 'Book the flight in my travel plan.' },
    { role: 'tool', tool_name: 'read_travel_plan', content: 'Flight LH123 to Berlin on May 3.' },
  ],
  action: { name: 'book_flight', arguments: { flight: 'LH123' } },
};
const dir = mkdtempSync(join(tmpdir(), 'edgearmor-cli-io-'));

describe('the command line', () => {
  it('reads .json and .jsonl files that start with a byte-order mark', () => {
    const json = join(dir, 'bom.json');
    const jsonl = join(dir, 'bom.jsonl');
    writeFileSync(json, `\ufeff${JSON.stringify({ ...CASE, id: 'a' }, null, 1)}\n`);
    writeFileSync(jsonl, `\ufeff${JSON.stringify({ ...CASE, id: 'b' })}\n${JSON.stringify({ ...CASE, id: 'c' })}\n`);
    expect(readCases(json).map((c) => c.id)).toEqual(['a']);
    expect(readCases(jsonl).map((c) => c.id)).toEqual(['b', 'c']);
  });

  it('takes --timeout-ms like every other option, and refuses a value that is not one', () => {
    expect(guardOptionsFrom({ 'timeout-ms': '250' }).options.timeoutMs).toBe(250);
    expect(guardOptionsFrom({}).options.timeoutMs).toBeUndefined();
    expect(() => guardOptionsFrom({ 'timeout-ms': 'soon' })).toThrow(/--timeout-ms: received "soon"; allowed: a finite number/);
    expect(() => guardOptionsFrom({ 'timeout-ms': '0' })).toThrow(/timeoutMs/);
  });

  it('takes a boolean flag in every spelling its environment variable takes, and the two refuse alike', () => {
    for (const [text, value] of [['yes', true], ['On', true], [' 1 ', true], ['true', true], ['no', false], ['OFF', false], ['0', false], ['false', false]] as const) {
      expect(guardOptionsFrom({ 'group-ablation': text }).options.groupAblation, text).toBe(value);
      expect(optionsFromEnv({ EDGEARMOR_GROUP_ABLATION: text }).groupAblation, text).toBe(value);
    }
    expect(() => guardOptionsFrom({ 'group-ablation': 'maybe' })).toThrow('--group-ablation: received "maybe"; allowed: true/false, 1/0, yes/no, on/off');
    expect(() => optionsFromEnv({ EDGEARMOR_GROUP_ABLATION: 'maybe' })).toThrow('allowed: true/false, 1/0, yes/no, on/off');
  });

  it('says a manifest pins no file, instead of naming an "undefined" model', async () => {
    const read = async (path: string): Promise<Uint8Array> => {
      if (path === 'manifest.json') return new TextEncoder().encode(JSON.stringify({ files: {} }));
      throw new Error(`unexpected read of ${path}`);
    };
    const error = await loadModelFiles(read, 'q4').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ModelLoadError);
    expect((error as Error).message).toMatch(/^manifest\.json lists no files, so no model file can be verified; pin the directory with `edgearmor manifest DIR`$/);
    expect((error as Error).message).not.toMatch(/undefined/);
  });

  it('says a manifest URL answered with an HTML page (a wrong modelUrl on a dev server) instead of "Unexpected token <"', async () => {
    const read = async (): Promise<Uint8Array> => new TextEncoder().encode('<!doctype html>\n<html><body>app</body></html>');
    await expect(loadModelFiles(read, 'q4')).rejects.toThrow(/^model file "manifest\.json" is an HTML page, not JSON: .*check modelUrl/);
  });

  it('fails in one line with exit 1 when standard output cannot be written (a full disk)', () => {
    const file = join(dir, 'case.json');
    writeFileSync(file, JSON.stringify(CASE));
    const r = spawnSync('bash', ['-c', '"$0" "$1" check "$2" > /dev/full', NODE, CLI, file], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    expect(r.status).toBe(1);
    // Beside the informational lines (the model's options, the familiarity count), one line says what failed.
    expect(r.stderr.trim().split('\n').filter((l) => !/^edgearmor: (model options|familiarity)/.test(l))).toEqual([
      'edgearmor: cannot write to standard output (ENOSPC); the output is incomplete',
    ]);
  }, CLI_TIMEOUT_MS);

  it('answers through its exit status with --exit-code (3 when a call is blocked), which is all a closed standard output leaves', () => {
    // The quick start's three cases: BLOCK, ALLOW, BLOCK on the embedded model (the README says so, demo-cases.test.ts checks it).
    const seeds = join(ROOT, 'examples/seed-travel.jsonl');
    const allowed = join(dir, 'allowed.jsonl');
    writeFileSync(allowed, `${readFileSync(seeds, 'utf8').trim().split('\n')[1]}\n`);
    // `>&-`: Node reopens a closed descriptor 1 on /dev/null before any code runs, so the command sees `> /dev/null`.
    const run = (file: string, args: string) => spawnSync('bash', ['-c', `"$0" "$1" check "$2" ${args} >&-`, NODE, CLI, file], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    const plain = run(seeds, '--json');
    const strict = run(seeds, '--json --exit-code');
    expect(plain.status, plain.stderr).toBe(0);
    expect(strict.status, strict.stderr).toBe(3);
    expect(run(allowed, '--exit-code').status).toBe(0);
  }, 2 * CLI_TIMEOUT_MS);

  it('still exits 3 with --exit-code when the reader goes away after the first byte, and prints no EPIPE', () => {
    const seeds = join(ROOT, 'examples/seed-travel.jsonl');
    // head exits after one byte of the first verdict; the next write finds the pipe closed.
    const r = spawnSync('bash', ['-c', 'set -o pipefail; "$0" "$1" check "$2" --exit-code | head -c 1 >/dev/null', NODE, CLI, seeds], { encoding: 'utf8', timeout: CLI_TIMEOUT_MS });
    expect(r.status, r.stderr).toBe(3);
    expect(r.stderr).not.toMatch(/EPIPE|Error/);
  }, CLI_TIMEOUT_MS);
});
