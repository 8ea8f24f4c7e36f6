/**
 * Vitest's sequencer, with the suite's slowest files started first. On a fresh clone Vitest has no timings
 * cached and starts the largest files first, so a short file of long browser checks could start last and run
 * alone while the other worker sat idle (webgpu-dev.test.ts: 79 s at the end of the run). Longest first is
 * the classic answer to packing jobs on a few workers. The list is of files over about 40 s in a fresh run on
 * a 2-core machine, longest first; every other file keeps Vitest's own order after them, so a stale entry only
 * costs a little packing, never a test.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SLOWEST_FIRST = [
  'test/model/adapt.test.ts',
  'test/engine/family-render.test.ts',
  'test/model/pipeline-smoke.test.ts',
  'test/engine/remote-family.test.ts',
  'test/engine/evasion-embedded.test.ts',
  'test/engine/fused-kernels.test.ts',
  'test/package/pack.test.ts',
  'test/engine/fault-matrix-process.test.ts',
  'test/browser/webgpu-dev.test.ts',
  'test/browser/demo-dev.test.ts',
  'test/browser/fault-matrix.test.ts',
  'test/browser/demo-build.test.ts',
];

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const i = SLOWEST_FIRST.indexOf(relative(this.ctx.config.root, spec.moduleId));
      return i === -1 ? SLOWEST_FIRST.length : i;
    };
    // Array.prototype.sort is stable: within a rank, and among the unlisted files, Vitest's order stands. The
    // base sort puts the projects in their groupOrder, and a rank never moves a file across projects.
    const project = (spec: TestSpecification): number => sorted.findIndex((s) => s.project === spec.project);
    return [...sorted].sort((a, b) => project(a) - project(b) || rank(a) - rank(b));
  }
}
