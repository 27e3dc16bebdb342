// Test hooks, wired only with PI_TEST_HOOKS=1: `<prefix>.test.<hook>`
// (the clock, fault injection, crashing a session's actor) and the deliberately broken guard of
// PI_TEST_BREAK_GUARD. Without PI_TEST_HOOKS=1 nothing here reaches a handler; test hooks are refused.
import { ok, type Result, refuse } from "../../protocol/result.ts";
import { SUBJECT_TOKEN } from "../../protocol/subjects.ts";
import type { Clock } from "../clock.ts";
import { createFaultInjector, type FaultInjector } from "../sessions/actors/fault-injector.ts";
import type { SessionSupervisor } from "../sessions/actors/session-supervisor.ts";
import { type Db, withTransaction } from "../store/db.ts";
import { turnOfIdempotencyKey } from "../store/session-facts.ts";
import type { SessionStore } from "../store/session-store.ts";
import type { HookHandler } from "./agent-api.ts";
import type { ClientHandler } from "./request-context.ts";

export interface TestHookConfig {
  testHooks: boolean;
  /** Test hooks only: deliberately break one host guard, to prove the model-based test notices. */
  testBreakGuard?: string | undefined;
}

export interface TestHookDeps {
  clock: Clock;
  faults: FaultInjector | undefined;
  db: Db;
  sessions: SessionStore;
  supervisor: SessionSupervisor;
}

/** The fault injector the stores and the supervisor consult: only with test hooks on. */
export function testFaults(config: TestHookConfig): FaultInjector | undefined {
  return config.testHooks ? createFaultInjector() : undefined;
}

/** The client handlers as served, and the test hooks (null: every `<prefix>.test.*` is refused). */
export function wireTestHooks<C extends { "session.prompt": ClientHandler<"session.prompt"> }>(
  config: TestHookConfig,
  client: C,
  deps: TestHookDeps,
): { client: C; test: Record<string, HookHandler> | null } {
  if (!config.testHooks || !deps.faults) return { client, test: null };
  const wired =
    config.testBreakGuard === "prompt-while-parked"
      ? { ...client, "session.prompt": promptWithoutGuards(deps) }
      : client;
  return { client: wired, test: createTestHooks({ ...deps, faults: deps.faults }) };
}

/**
 * PI_TEST_BREAK_GUARD=prompt-while-parked: session.prompt with the owner check (the bus's gate) and
 * the idempotency check but no machine guard and no busy check, so the model-based test can prove it
 * notices a broken guard.
 */
function promptWithoutGuards(deps: TestHookDeps): ClientHandler<"session.prompt"> {
  const { db, sessions } = deps;
  return async (_principal, p) => {
    if (p.idempotencyKey) {
      const turnId = await turnOfIdempotencyKey(db, p.sessionId, p.idempotencyKey);
      if (turnId) return ok({ turnId });
    }
    const turnId = await withTransaction(db, (tx) =>
      sessions.insertTurn(tx, { sessionId: p.sessionId, kind: "prompt", text: p.text }),
    );
    return ok({ turnId });
  };
}

function num(p: unknown, key: string): Result<number> {
  const v = (p as Record<string, unknown> | null)?.[key];
  return typeof v === "number" && Number.isFinite(v)
    ? ok(v)
    : refuse("INVALID_PARAMS", `${key} must be a number`);
}

function stepName(p: unknown): Result<string> {
  const step = (p as Record<string, unknown> | null)?.step;
  return typeof step === "string" && step ? ok(step) : refuse("INVALID_PARAMS", "step must be a step name");
}

/** Each hook answers a Result, as the client handlers do (bus/reply.ts replies with it). */
export function createTestHooks(deps: TestHookDeps & { faults: FaultInjector }): Record<string, HookHandler> {
  const { clock, faults, db, sessions, supervisor } = deps;
  return {
    "clock.get": async () => ok({ now: clock.now() }),
    "clock.set": async (p) => {
      const now = num(p, "now");
      if (!now.ok) return now;
      clock.set(now.value);
      return ok({ now: clock.now() });
    },
    "clock.advance": async (p) => {
      const ms = num(p, "ms");
      if (!ms.ok) return ms;
      clock.advance(ms.value);
      return ok({ now: clock.now() });
    },
    "faults.fail": async (p) => {
      const step = stepName(p);
      if (!step.ok) return step;
      const count = (p as Record<string, unknown>).count;
      faults.failNext(step.value, typeof count === "number" && count > 0 ? count : 1);
      return ok({ armed: step.value });
    },
    "faults.hold": async (p) => {
      const step = stepName(p);
      if (!step.ok) return step;
      faults.holdNext(step.value);
      return ok({ holding: step.value });
    },
    "faults.held": async (p) => {
      const step = String((p as Record<string, unknown> | null)?.step ?? "");
      await faults.whenHeld(step);
      return ok({ held: step });
    },
    "faults.release": async (p) => {
      const step = String((p as Record<string, unknown> | null)?.step ?? "");
      return ok({ released: faults.release(step) });
    },
    "faults.clear": async () => {
      faults.clear();
      return ok({ cleared: true });
    },
    // "Crash an actor": the session's actor throws (its provided injectFault action).
    "actor.fault": async (p) => {
      const sessionId = (p as Record<string, unknown> | null)?.sessionId;
      if (typeof sessionId !== "string" || !SUBJECT_TOKEN.test(sessionId))
        return refuse("INVALID_PARAMS", "sessionId must be a session id");
      await sessions.getRow(db, sessionId);
      return ok(await supervisor.fault(sessionId));
    },
  };
}
