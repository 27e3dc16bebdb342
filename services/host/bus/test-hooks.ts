// Test hooks (DESIGN §10), served on `<prefix>.test.<hook>` only with PI_TEST_HOOKS=1: the clock
// (set, advance) and fault injection (fail the next run of a named step). Refused otherwise.
import { AppError } from "../../protocol/app-error.ts";
import type { AgentHandler } from "./agent-api.ts";
import type { Clock } from "../clock.ts";
import type { FaultInjector } from "../sessions/fault-injector.ts";

function num(p: unknown, key: string): number {
  const v = (p as Record<string, unknown> | null)?.[key];
  if (typeof v !== "number" || !Number.isFinite(v))
    throw new AppError("INVALID_PARAMS", `${key} must be a number`);
  return v;
}

export function createTestHooks(deps: {
  clock: Clock;
  faults: FaultInjector;
  extra?: Record<string, AgentHandler>;
}): Record<string, AgentHandler> {
  const { clock, faults } = deps;
  return {
    "clock.get": async () => ({ now: clock.now() }),
    "clock.set": async (p) => {
      clock.set(num(p, "now"));
      return { now: clock.now() };
    },
    "clock.advance": async (p) => {
      clock.advance(num(p, "ms"));
      return { now: clock.now() };
    },
    "faults.fail": async (p) => {
      const step = (p as Record<string, unknown> | null)?.step;
      if (typeof step !== "string" || !step) throw new AppError("INVALID_PARAMS", "step must be a step name");
      const count = (p as Record<string, unknown>).count;
      faults.failNext(step, typeof count === "number" && count > 0 ? count : 1);
      return { armed: step };
    },
    "faults.hold": async (p) => {
      const step = (p as Record<string, unknown> | null)?.step;
      if (typeof step !== "string" || !step) throw new AppError("INVALID_PARAMS", "step must be a step name");
      faults.holdNext(step);
      return { holding: step };
    },
    "faults.held": async (p) => {
      const step = String((p as Record<string, unknown> | null)?.step ?? "");
      await faults.whenHeld(step);
      return { held: step };
    },
    "faults.release": async (p) => {
      const step = String((p as Record<string, unknown> | null)?.step ?? "");
      return { released: faults.release(step) };
    },
    "faults.clear": async () => {
      faults.clear();
      return { cleared: true };
    },
    ...deps.extra,
  };
}
