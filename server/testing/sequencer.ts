// The order vitest starts test files in: longest first, from the durations of the last full
// run (durations.ts). With two workers, a long file that starts last runs alone at the end:
// by file size, vitest's order without a cache of its own (a fresh clone, as CI has) started
// the two-minute soak last, and 436 s of a 1,090 s run had a worker idle. Files not in the
// list (new ones) go first: their length is unknown.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { longestFirst, readDurations } from './durations.js';

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    return longestFirst(files, (f) => relative(root, f.moduleId), readDurations());
  }
}
