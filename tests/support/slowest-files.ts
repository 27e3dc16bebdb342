// A vitest reporter (vitest.config.ts) that ends every run with its 20 slowest test files: the
// suite's budget (README.md "Tests": npm test under 6 minutes on 2 cores) is spent file by file,
// and this list shows every change where it went. The time is each file's own (tests and hooks).
import path from "node:path";
import type { Reporter, TestModule } from "vitest/node";

const SHOWN = 20;

export default class SlowestFiles implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const timed = modules
      .map((m) => ({ file: path.relative(process.cwd(), m.moduleId), ms: m.diagnostic().duration }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, SHOWN);
    if (timed.length === 0) return;
    const total = modules.reduce((sum, m) => sum + m.diagnostic().duration, 0);
    const lines = timed.map((t) => `${(t.ms / 1000).toFixed(1).padStart(7)} s  ${t.file}`);
    process.stdout.write(
      `\nslowest ${timed.length} of ${modules.length} test files (${(total / 1000).toFixed(0)} s of file time in all):\n${lines.join("\n")}\n`,
    );
  }
}
