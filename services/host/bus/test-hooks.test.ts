// The test hooks are wired only with PI_TEST_HOOKS=1: without it the client handlers are served as
// they are (no broken guard, whatever PI_TEST_BREAK_GUARD says) and every test hook is refused.
import { describe, expect, it } from "vitest";
import type { Clock } from "../clock.ts";
import { createFaultInjector } from "../sessions/actors/fault-injector.ts";
import type { SessionSupervisor } from "../sessions/actors/session-supervisor.ts";
import type { Db } from "../store/db.ts";
import type { SessionStore } from "../store/session-store.ts";
import { ok } from "../../protocol/result.ts";
import type { ClientHandler } from "./request-context.ts";
import { testFaults, wireTestHooks } from "./test-hooks.ts";

const prompt: ClientHandler<"session.prompt"> = async () => ok({ turnId: "t1" });
const client = { "session.prompt": prompt };
const deps = {
  clock: {} as Clock,
  db: {} as Db,
  sessions: {} as SessionStore,
  supervisor: {} as SessionSupervisor,
};

describe("test hooks wiring", () => {
  it("without PI_TEST_HOOKS=1: no faults, the client map untouched, no hooks", () => {
    const config = { testHooks: false, testBreakGuard: "prompt-while-parked" };
    expect(testFaults(config)).toBeUndefined();
    const wired = wireTestHooks(config, client, { ...deps, faults: createFaultInjector() });
    expect(wired.test).toBeNull();
    expect(wired.client).toBe(client);
    expect(wired.client["session.prompt"]).toBe(prompt);
  });

  it("with PI_TEST_HOOKS=1: the hooks, and the broken guard only when asked for", () => {
    const on = { testHooks: true };
    const faults = testFaults(on);
    expect(faults).toBeDefined();
    const plain = wireTestHooks(on, client, { ...deps, faults });
    expect(Object.keys(plain.test ?? {})).toEqual(
      expect.arrayContaining(["clock.get", "clock.advance", "faults.fail", "actor.fault"]),
    );
    expect(plain.client["session.prompt"]).toBe(prompt);
    const broken = wireTestHooks({ ...on, testBreakGuard: "prompt-while-parked" }, client, {
      ...deps,
      faults,
    });
    expect(broken.client["session.prompt"]).not.toBe(prompt);
    expect(client["session.prompt"]).toBe(prompt);
  });
});
