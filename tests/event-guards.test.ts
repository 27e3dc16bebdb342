// The guards the suites find and wait for session events with (tests/support/events.ts): a guard
// takes an event of its type that passes its predicate, and nothing else.
import { describe, expect, it } from "vitest";
import type { SessionEvent } from "../services/protocol/events.ts";
import { eventsOf, isEvent, isLive } from "./support/events.ts";

const envelope = { sessionId: "s1", at: "2026-01-01T00:00:00.000Z", cursor: "0".repeat(32) };
const events: SessionEvent[] = [
  { type: "turn.started", turnId: "t1", kind: "prompt", seq: 1, ...envelope },
  { type: "message", turnId: "t1", role: "assistant", text: "hi", seq: 2, ...envelope },
  { type: "turn.ended", turnId: "t1", status: "completed", seq: 3, ...envelope },
  { type: "message", turnId: "t2", role: "assistant", text: "again", seq: 4, ...envelope },
];

describe("session event guards", () => {
  it("isEvent(type) takes the events of that type only", () => {
    expect(events.filter(isEvent("message")).map((e) => e.text)).toEqual(["hi", "again"]);
    expect(events.find(isEvent("turn.ended"))?.status).toBe("completed");
    expect(events.some(isEvent("plan.changed"))).toBe(false);
  });

  it("isEvent(type, pred) also asks the predicate, and only of events of that type", () => {
    const seen: string[] = [];
    const second = events.find(
      isEvent("message", (e) => {
        seen.push(e.type);
        return e.turnId === "t2";
      }),
    );
    expect(second?.seq).toBe(4);
    expect(seen).toEqual(["message", "message"]);
    expect(events.filter(isEvent("turn.started", (e) => e.kind === "execution"))).toEqual([]);
  });

  it("eventsOf keeps the order; isLive is the bus's live flag, true only when it says true", () => {
    expect(eventsOf(events, "message").map((e) => e.seq)).toEqual([2, 4]);
    // As on the bus: a field the event types do not name.
    const live = { type: "machine.state" as const, state: "loading", seq: 5, live: true, ...envelope };
    const notLive = { type: "machine.state" as const, state: "idle", seq: 6, live: "yes", ...envelope };
    expect([isLive(live), isLive(notLive), ...events.map(isLive)]).toEqual([
      true,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
