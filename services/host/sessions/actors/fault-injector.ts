// Fault injection for tests (PI_TEST_HOOKS=1 only): fail the next N runs of a named
// session-machine step, or hold the next run of a step until released (so a test can act while the
// session is in that step). A failed step fails before it writes anything, like a lost database.
import { AppError } from "../../../protocol/app-error.ts";

export function createFaultInjector() {
  const pending = new Map<string, number>();
  const holds = new Map<
    string,
    { armed: boolean; release: (() => void) | null; reached: Array<() => void>; isHeld: boolean }
  >();
  const hold = (step: string) => {
    let h = holds.get(step);
    if (!h) {
      h = { armed: false, release: null, reached: [], isHeld: false };
      holds.set(step, h);
    }
    return h;
  };
  return {
    failNext(step: string, count = 1): void {
      pending.set(step, (pending.get(step) ?? 0) + count);
    },
    /** The next run of `step` waits until release(step). */
    holdNext(step: string): void {
      hold(step).armed = true;
    },
    /** Resolves once a run of `step` is being held. */
    whenHeld(step: string): Promise<void> {
      const h = hold(step);
      if (h.isHeld) return Promise.resolve();
      return new Promise((resolve) => h.reached.push(resolve));
    },
    release(step: string): boolean {
      const h = holds.get(step);
      if (!h?.release) return false;
      h.release();
      return true;
    },
    /** Called at the start of every step: throws an armed failure, or waits while held. */
    async enter(step: string): Promise<void> {
      const h = holds.get(step);
      if (h?.armed) {
        h.armed = false;
        h.isHeld = true;
        await new Promise<void>((resolve) => {
          h.release = resolve;
          for (const r of h.reached.splice(0)) r();
        });
        h.release = null;
        h.isHeld = false;
      }
      const n = pending.get(step) ?? 0;
      if (n <= 0) return;
      if (n === 1) pending.delete(step);
      else pending.set(step, n - 1);
      throw new AppError("INTERNAL", `injected fault in ${step}`);
    },
    clear(): void {
      pending.clear();
      for (const h of holds.values()) h.release?.();
      holds.clear();
    },
  };
}

export type FaultInjector = ReturnType<typeof createFaultInjector>;
