// The turn machine through its paths: every state is reachable, a claim is taken once, a lease
// without heartbeats is lost on the injected clock, and a heartbeat restarts the lease.
import { getShortestPaths } from "@xstate/graph";
import { createActor, SimulatedClock } from "xstate";
import { describe, expect, it } from "vitest";
import { turnMachine } from "./turn.machine.ts";

const input = { turnId: "t1", sessionId: "s1", kind: "prompt" as const };

function run() {
  const log: string[] = [];
  const machine = turnMachine.provide({
    actions: {
      publishOffer: () => log.push("offer"),
      publishCancel: () => log.push("cancel"),
      leaseLost: () => log.push("lost"),
    },
    delays: { offerInterval: 500, lease: 15_000 },
  });
  const clock = new SimulatedClock();
  const actor = createActor(machine, { input, clock });
  actor.start();
  return { actor, clock, log };
}

describe("turn machine", () => {
  it("reaches every state", () => {
    const paths = getShortestPaths(turnMachine, {
      input,
      events: [
        { type: "TAKE" },
        { type: "GRANT", workerId: "w", token: "tok" },
        { type: "RESTORE" },
        { type: "REOFFER" },
        { type: "BEAT" },
        { type: "PARK" },
        { type: "REVOKE" },
      ],
    });
    const reached = new Set(paths.map((p) => JSON.stringify(p.state.value)));
    for (const s of Object.keys(turnMachine.config.states ?? {})) {
      if (s !== "lost") expect(reached).toContain(JSON.stringify(s));
    }
  });

  it("re-offers until claimed, then holds a lease that heartbeats keep alive", () => {
    const { actor, clock, log } = run();
    clock.increment(600);
    clock.increment(600);
    expect(log.filter((l) => l === "offer")).toHaveLength(3);
    actor.send({ type: "TAKE" });
    actor.send({ type: "TAKE" });
    expect(actor.getSnapshot().value).toBe("claiming");
    actor.send({ type: "GRANT", workerId: "w", token: "tok" });
    clock.increment(10_000);
    actor.send({ type: "BEAT" });
    clock.increment(10_000);
    expect(actor.getSnapshot().value).toBe("leased");
    clock.increment(5_001);
    expect(actor.getSnapshot().value).toBe("lost");
    expect(log.slice(-2)).toEqual(["lost", "cancel"]);
    expect(actor.getSnapshot().status).toBe("done");
  });

  it("a restored claim is claimable again; park ends quietly; revoke of a lease tells the worker", () => {
    const a = run();
    a.actor.send({ type: "TAKE" });
    a.actor.send({ type: "RESTORE" });
    expect(a.actor.getSnapshot().value).toBe("offered");
    a.actor.send({ type: "TAKE" });
    a.actor.send({ type: "GRANT", workerId: "w", token: "tok" });
    a.actor.send({ type: "PARK" });
    expect(a.actor.getSnapshot().value).toBe("parked");
    expect(a.log).not.toContain("cancel");
    const b = run();
    b.actor.send({ type: "TAKE" });
    b.actor.send({ type: "GRANT", workerId: "w", token: "tok" });
    b.actor.send({ type: "REVOKE" });
    expect(b.actor.getSnapshot().value).toBe("revoked");
    expect(b.log).toContain("cancel");
  });
});
