// The order integration files start in (vitest.config.ts): files under tests/slow/ first, since a
// file that takes a minute started last leaves the other worker idle for that minute at the end.
// The rest keep vitest's own order (after a first run, slowest and failed files first).
import { BaseSequencer, type TestSpecification } from "vitest/node";

export default class SlowFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const slow = (f: TestSpecification) => f.moduleId.includes("/tests/slow/");
    return [...sorted.filter(slow), ...sorted.filter((f) => !slow(f))];
  }
}
