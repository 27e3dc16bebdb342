import { describe, expect, it } from "vitest";
import { eventTypeFromSubject, parseSessionEvent } from "./session-event.ts";

describe("eventTypeFromSubject", () => {
  it("keeps dotted types whole", () => {
    expect(eventTypeFromSubject("pi", "alice", "s1", "pi.evt.alice.s1.turn.started")).toBe("turn.started");
    expect(eventTypeFromSubject("pi", "alice", "s1", "pi.evt.alice.s1.message")).toBe("message");
  });
  it("rejects other sessions, principals and prefixes", () => {
    expect(eventTypeFromSubject("pi", "alice", "s1", "pi.evt.alice.s2.message")).toBeNull();
    expect(eventTypeFromSubject("pi", "alice", "s1", "pi.evt.bob.s1.message")).toBeNull();
    expect(eventTypeFromSubject("pi", "alice", "s1", "px.evt.alice.s1.message")).toBeNull();
    expect(eventTypeFromSubject("pi", "alice", "s1", "pi.evt.alice.s1.")).toBeNull();
  });
});

describe("parseSessionEvent", () => {
  it("takes the type from the subject and the fields from the body", () => {
    const e = parseSessionEvent(
      "pi",
      "alice",
      "s1",
      "pi.evt.alice.s1.turn.ended",
      JSON.stringify({ sessionId: "s1", at: "x", turnId: "t1", status: "completed" }),
    );
    expect(e).toEqual({ type: "turn.ended", sessionId: "s1", at: "x", turnId: "t1", status: "completed" });
  });
  it.each(["not json", "[]", "null", "42"])("drops a body that is not a JSON object: %s", (body) => {
    expect(parseSessionEvent("pi", "a", "s1", "pi.evt.a.s1.message", body)).toBeNull();
  });
  it("drops unknown event types", () => {
    expect(parseSessionEvent("pi", "a", "s1", "pi.evt.a.s1.tool.exploded", "{}")).toBeNull();
  });
});
