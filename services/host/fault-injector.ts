// Fault injection for tests (DESIGN §10, PI_TEST_HOOKS=1 only): fail the next N runs of a named
// session-machine step. The step fails before it writes anything, like a lost database.
import { AppError } from "../protocol/app-error.ts";

export function createFaultInjector() {
  const pending = new Map<string, number>();
  return {
    failNext(step: string, count = 1): void {
      pending.set(step, (pending.get(step) ?? 0) + count);
    },
    /** Throws when a failure is armed for this step (and uses it up). */
    check(step: string): void {
      const n = pending.get(step) ?? 0;
      if (n <= 0) return;
      if (n === 1) pending.delete(step);
      else pending.set(step, n - 1);
      throw new AppError("INTERNAL", `injected fault in ${step}`);
    },
    clear(): void {
      pending.clear();
    },
  };
}

export type FaultInjector = ReturnType<typeof createFaultInjector>;
