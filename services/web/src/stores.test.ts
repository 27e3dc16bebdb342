import { describe, expect, it } from "vitest";
import {
  applyFeedItem,
  createAppStores,
  deltaAdded,
  eventsAdded,
  initialEvents,
  initialPermissions,
  initialPlans,
  initialSessions,
  pendingListed,
  permissionEvent,
  permissionsListed,
  planEvent,
  proposalSeen,
  sessionEvent,
  sessionGot,
  sessionsListed,
  vanishedPending,
} from "./stores.ts";
import { ev, proposal, sessionView } from "./test-fixtures.ts";

describe("sessions", () => {
  it("a list re-read replaces what was known and keeps a machine state the list does not carry", () => {
    let ctx = sessionsListed(initialSessions, [sessionView(), sessionView({ id: "s2" })]);
    ctx = sessionEvent(ctx, ev("machine.state", 1, { state: "running" }));
    ctx = sessionsListed(ctx, [sessionView()]);
    expect(Object.keys(ctx.byId)).toEqual(["s1"]);
    expect(ctx.byId.s1!.machineState).toBe("running");
    expect(ctx.loaded).toBe(true);
  });

  it("session.get's machineState wins over what events said", () => {
    let ctx = sessionsListed(initialSessions, [sessionView()]);
    ctx = sessionEvent(ctx, ev("machine.state", 1, { state: "running" }));
    ctx = sessionGot(ctx, sessionView({ machineState: "passivated" }));
    expect(ctx.byId.s1!.machineState).toBe("passivated");
  });

  it("events change the fields they name, and an older or repeated event changes nothing", () => {
    let ctx = sessionsListed(initialSessions, [sessionView()]);
    ctx = sessionEvent(ctx, ev("turn.started", 2, { turnId: "t1", kind: "prompt" }));
    expect(ctx.byId.s1!.activeTurnId).toBe("t1");
    expect(ctx.byId.s1!.lastActivity).toBe("2026-01-01T10:02:00.000Z");
    ctx = sessionEvent(
      ctx,
      ev("session.changed", 3, {
        mode: "plan",
        permissionMode: "ask",
        planningState: "planning",
        version: 2,
      }),
    );
    expect(ctx.byId.s1).toMatchObject({
      mode: "plan",
      permissionMode: "ask",
      planningState: "planning",
      version: 2,
    });
    const before = ctx;
    expect(sessionEvent(ctx, ev("turn.ended", 3, { turnId: "t1", status: "completed" }))).toBe(before);
    expect(sessionEvent(ctx, ev("turn.ended", 1, { turnId: "t1", status: "completed" }))).toBe(before);
    ctx = sessionEvent(ctx, ev("turn.ended", 4, { turnId: "t1", status: "completed" }));
    expect(ctx.byId.s1!.activeTurnId).toBeNull();
    ctx = sessionEvent(ctx, ev("plan.changed", 5, { state: "awaiting_approval" }));
    expect(ctx.byId.s1!.planningState).toBe("awaiting_approval");
  });

  it("an event of a session not listed yet is left to the re-read it triggers", () => {
    const ctx = sessionsListed(initialSessions, []);
    expect(sessionEvent(ctx, ev("machine.state", 1, { state: "idle" }, "other"))).toBe(ctx);
  });
});

describe("events and live text", () => {
  it("merges by seq: out of order, duplicated and history reads give one sorted list", () => {
    let ctx = eventsAdded(initialEvents, [
      ev("message", 3, { turnId: "t", text: "c" }),
      ev("turn.started", 1, { turnId: "t" }),
    ]);
    ctx = eventsAdded(ctx, [
      ev("turn.claimed", 2, { turnId: "t" }),
      ev("message", 3, { turnId: "t", text: "dup" }),
    ]);
    expect(ctx.bySession.s1!.map((e) => e.seq)).toEqual([1, 2, 3]);
    expect((ctx.bySession.s1![2] as { text?: string }).text).toBe("c");
  });

  it("live deltas accumulate per turn until the turn's message replaces them", () => {
    let ctx = deltaAdded(initialEvents, {
      type: "delta",
      sessionId: "s1",
      turnId: "t1",
      chunks: [
        { kind: "text", text: "Hel" },
        { kind: "thinking", text: "hmm" },
      ],
    });
    ctx = deltaAdded(ctx, {
      type: "delta",
      sessionId: "s1",
      turnId: "t1",
      chunks: [{ kind: "text", text: "lo" }],
      dropped: 2,
    });
    expect(ctx.live.s1!.t1).toEqual({ text: "Hello", thinking: "hmm", dropped: 2 });
    ctx = eventsAdded(ctx, [ev("message", 4, { turnId: "t1", role: "assistant", text: "Hello" })]);
    expect(ctx.live.s1!.t1).toBeUndefined();
  });
});

describe("plans", () => {
  it("a re-read lists the pending; one no longer listed is named for a plans.get, not guessed", () => {
    let ctx = pendingListed(initialPlans, [proposal(), proposal({ proposalId: "pr2", sessionId: "s2" })]);
    expect(vanishedPending(ctx, [], "s1")).toEqual(["pr1"]);
    expect(vanishedPending(ctx, [], null)).toEqual(["pr1", "pr2"]);
    ctx = proposalSeen(ctx, proposal({ status: "approved", version: 2 }));
    expect(vanishedPending(ctx, [], "s1")).toEqual([]);
  });

  it("a terminal proposal never turns pending again from an older read", () => {
    let ctx = proposalSeen(initialPlans, proposal({ status: "expired", version: 2 }));
    ctx = pendingListed(ctx, [proposal({ version: 1 })]);
    expect(ctx.byId.pr1!.status).toBe("expired");
    ctx = proposalSeen(ctx, proposal({ status: "pending", version: 2 }));
    expect(ctx.byId.pr1!.status).toBe("expired");
  });

  it("plan.changed with a proposal updates it (a reload restores the same deadline from plans.pending)", () => {
    const p = proposal({ deadline: "2026-01-01T10:30:00.000Z" });
    let ctx = planEvent(
      initialPlans,
      ev("plan.changed", 1, { state: "awaiting_approval", action: "submitted", proposal: p }),
    );
    expect(ctx.byId.pr1!.deadline).toBe("2026-01-01T10:30:00.000Z");
    ctx = planEvent(ctx, ev("plan.changed", 2, { state: "planning" }));
    expect(ctx.byId.pr1!.status).toBe("pending");
    const reloaded = pendingListed(initialPlans, [p]);
    expect(reloaded.byId.pr1!.deadline).toBe(ctx.byId.pr1!.deadline);
  });
});

describe("permission prompts", () => {
  const requested = ev("permission.requested", 1, {
    requestId: "r1",
    turnId: "t1",
    toolCallId: "c1",
    tool: "bash",
    risk: "high",
    preview: { command: "rm -rf build" },
    deadline: "2026-01-01T10:05:00.000Z",
  });

  it("requested, then resolved", () => {
    let ctx = permissionEvent(initialPermissions, requested);
    expect(ctx.byId.r1!.status).toBe("pending");
    ctx = permissionEvent(
      ctx,
      ev("permission.resolved", 2, {
        requestId: "r1",
        turnId: "t1",
        toolCallId: "c1",
        tool: "bash",
        decision: "deny",
        code: "PERMISSION_TIMEOUT",
      }),
    );
    expect(ctx.byId.r1).toMatchObject({ status: "denied", decision: "deny", code: "PERMISSION_TIMEOUT" });
  });

  it("a re-read drops pending prompts of its scope that it does not list, and keeps other sessions'", () => {
    let ctx = permissionEvent(initialPermissions, requested);
    ctx = permissionEvent(
      ctx,
      ev(
        "permission.requested",
        1,
        { requestId: "r2", tool: "edit", risk: "low", preview: {}, deadline: "x" },
        "s2",
      ),
    );
    ctx = permissionsListed(ctx, [], "s1");
    expect(Object.keys(ctx.byId)).toEqual(["r2"]);
  });
});

describe("the stores", () => {
  it("a feed item reaches every store it concerns", () => {
    const stores = createAppStores();
    stores.sessions.trigger.listed({ sessions: [sessionView()] });
    applyFeedItem(stores, ev("machine.state", 1, { state: "running" }));
    applyFeedItem(stores, ev("plan.changed", 2, { state: "awaiting_approval", proposal: proposal() }));
    applyFeedItem(stores, {
      type: "delta",
      sessionId: "s1",
      turnId: "t1",
      chunks: [{ kind: "text", text: "x" }],
    });
    expect(stores.sessions.getSnapshot().context.byId.s1!.machineState).toBe("running");
    expect(stores.plans.getSnapshot().context.byId.pr1!.status).toBe("pending");
    expect(stores.events.getSnapshot().context.bySession.s1!.map((e) => e.seq)).toEqual([1, 2]);
    expect(stores.events.getSnapshot().context.live.s1!.t1!.text).toBe("x");
  });
});
