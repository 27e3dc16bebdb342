// The METHODS table's gate is enforced by the bus before any handler runs (services/host/bus/gates.ts):
// every client method whose gate is `owner` or `approver` of the session it names is tried, against
// the real host, by a project member who is neither (carol), by an approver where only the owner
// may (bob), and on a session that does not exist. Each is refused with its stable code and nothing
// changes: no turn, no configuration, no event. The handlers of session.prompt and
// session.configure no longer check the caller themselves, so a gate that let anyone through would
// show here as a turn or a changed session.
import { describe, expect, it } from "vitest";
import { type ClientMethod, CLIENT_METHODS, METHODS, type MethodSpec } from "../services/protocol/methods.ts";
import { addMembers, eventsSettled } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const stack = useStack("gates", { host: true });

/** A well-formed body of each session-gated method, for the session `sessionId`. */
const SAMPLE: Partial<Record<ClientMethod, (sessionId: string) => Record<string, unknown>>> = {
  "session.get": (sessionId) => ({ sessionId }),
  "session.configure": (sessionId) => ({ sessionId, mode: "plan", approvers: ["carol"] }),
  "session.prompt": (sessionId) => ({ sessionId, text: "rm -rf the repository" }),
  "session.abort": (sessionId) => ({ sessionId }),
  "plans.pending": (sessionId) => ({ sessionId }),
  "plans.history": (sessionId) => ({ sessionId }),
  "permissions.pending": (sessionId) => ({ sessionId }),
  "events.since": (sessionId) => ({ sessionId }),
};

const gated = CLIENT_METHODS.filter((m) => {
  const spec: MethodSpec = METHODS[m];
  return spec.session === "sessionId" && (spec.gate === "owner" || spec.gate === "approver");
});

describe("method gates", () => {
  it("every session-gated method has a sample body here", () => {
    expect(gated.filter((m) => !SAMPLE[m])).toEqual([]);
    expect(gated).toEqual(expect.arrayContaining(["session.prompt", "session.configure", "session.get"]));
  });

  it("refuse a member who is neither owner nor approver, an approver where the owner alone may, and an unknown session, before any handler runs", async () => {
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("gates");
    const project = await alice.call("projects.create", { name: "g", workspaceRoot: ws });
    await addMembers(stack, project.id, ["bob", "carol"]);
    const s = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
      approvers: ["bob"],
    });
    // Read below the horizon once every stored event is (other files' transactions hold it back).
    await eventsSettled(stack.db.pool);
    const eventsBefore = await alice.call("events.since", { sessionId: s.id });
    expect(eventsBefore.events.map((e) => e.type)).toContain("approvers.added");

    for (const method of gated) {
      const body = SAMPLE[method]?.(s.id) ?? {};
      expect(await refusalCode(stack.client("carol").call(method, body)), `${method} by carol`).toBe(
        "FORBIDDEN",
      );
      if (METHODS[method].gate === "owner")
        expect(await refusalCode(stack.client("bob").call(method, body)), `${method} by bob`).toBe(
          "FORBIDDEN",
        );
      expect(
        await refusalCode(stack.client("carol").call(method, SAMPLE[method]?.("ses_missing") ?? {})),
        `${method} on a missing session`,
      ).toBe("SESSION_NOT_FOUND");
    }

    // Nothing changed: the session as it was, no turn, no event.
    const after = await alice.call("session.get", { sessionId: s.id });
    expect({ mode: after.mode, approvers: after.approvers, version: after.version }).toEqual({
      mode: s.mode,
      approvers: s.approvers,
      version: s.version,
    });
    const turns = await stack.db.pool.query("SELECT count(*)::int AS n FROM turns WHERE session_id = $1", [
      s.id,
    ]);
    expect(turns.rows[0].n).toBe(0);
    await eventsSettled(stack.db.pool);
    const eventsAfter = await alice.call("events.since", { sessionId: s.id });
    expect(eventsAfter.events.map((e) => [e.seq, e.type])).toEqual(
      eventsBefore.events.map((e) => [e.seq, e.type]),
    );
  });
});
