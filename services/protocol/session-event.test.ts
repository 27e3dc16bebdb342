import { describe, expect, it } from "vitest";
import {
  eventTypeFromSubject,
  parseFeedMessage,
  parseLiveDelta,
  parseSessionEvent,
} from "./session-event.ts";

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

describe("pihost watch: every session of the principal", () => {
  it("takes the session from the subject", () => {
    const e = parseSessionEvent("pi", "alice", null, "pi.evt.alice.s9.turn.started", '{"turnId":"t"}');
    expect(e).toMatchObject({ type: "turn.started", sessionId: "s9", turnId: "t" });
    expect(parseSessionEvent("pi", "alice", null, "pi.evt.bob.s9.turn.started", "{}")).toBeNull();
    expect(parseSessionEvent("pi", "alice", null, "pi.evt.alice.s9", "{}")).toBeNull();
  });
  it("live deltas: well-formed chunks only, another principal's never", () => {
    const body = JSON.stringify({
      turnId: "t",
      chunks: [{ kind: "text", text: "hi" }, { kind: "exploit", text: "x" }, { kind: "text" }],
    });
    expect(parseFeedMessage("pi", "alice", "s1", "pi.live.alice.s1.delta", body)).toEqual({
      type: "delta",
      sessionId: "s1",
      turnId: "t",
      chunks: [{ kind: "text", text: "hi" }],
    });
    expect(parseLiveDelta("pi", "alice", "s1", "pi.live.alice.s2.delta", body)).toBeNull();
    expect(parseLiveDelta("pi", "alice", null, "pi.live.bob.s1.delta", body)).toBeNull();
    expect(
      parseLiveDelta("pi", "alice", null, "pi.live.alice.s1.delta", '{"turnId":"t","chunks":[]}'),
    ).toBeNull();
  });
});
