import { describe, expect, it } from "vitest";
import type { SessionEvent } from "./events.ts";
import { createSessionFeed } from "./session-feed.ts";

/** A cursor as the store writes them: 32 hex digits that compare as strings (event-store.ts). */
const at = (n: number) => n.toString(16).padStart(32, "0");
const ev = (seq: number, cursor = seq * 10, sessionId = "s"): SessionEvent => ({
  type: "message",
  sessionId,
  at: "",
  seq,
  cursor: at(cursor),
  turnId: "t",
  role: "assistant",
  text: `${seq}`,
});

function drain(feed: ReturnType<typeof createSessionFeed>): number[] {
  const seqs: number[] = [];
  for (let e = feed.take(); e; e = feed.take()) seqs.push(e.type === "delta" ? -1 : e.seq);
  return seqs;
}

describe("createSessionFeed", () => {
  it("passes live events on once, in order", () => {
    const f = createSessionFeed();
    for (const s of [1, 2, 2, 3]) f.live(ev(s));
    expect(drain(f)).toEqual([1, 2, 3]);
  });

  it("after a reconnect: asks after the last page position, never a live cursor; fills the gap once", () => {
    const f = createSessionFeed();
    f.startAt(at(5));
    f.live(ev(1));
    f.live(ev(2));
    expect(drain(f)).toEqual([1, 2]);
    // A live event's cursor is not a position: an earlier transaction may still commit below it.
    expect(f.beginCatchUp()).toBe(at(5));
    // Disconnected while 3..5 were published; 5 and 6 arrive live during the catch-up.
    f.live(ev(6));
    f.live(ev(5));
    f.fetched([ev(1), ev(2), ev(3), ev(4), ev(5)], at(55));
    expect(drain(f)).toEqual([3, 4, 5]);
    f.endCatchUp();
    expect(drain(f)).toEqual([6]);
    f.live(ev(4));
    f.live(ev(7));
    expect(drain(f)).toEqual([7]);
    // The next catch-up starts where that page ended.
    expect(f.beginCatchUp()).toBe(at(55));
  });

  it("a catch-up before any position is known says so; a failed one still releases what was held", () => {
    const f = createSessionFeed();
    expect(f.beginCatchUp()).toBeNull();
    f.live(ev(2));
    f.live(ev(1));
    f.endCatchUp();
    expect(drain(f)).toEqual([1, 2]);
  });

  it("many sessions in one feed (pihost watch): sequences are per session, the position is one", () => {
    const f = createSessionFeed();
    f.startAt(at(9));
    f.live(ev(1, 10, "a"));
    f.live(ev(1, 11, "b"));
    f.live(ev(1, 11, "b"));
    expect(drain(f)).toEqual([1, 1]);
    expect(f.beginCatchUp()).toBe(at(9));
    f.live(ev(3, 14, "a"));
    f.fetched([ev(2, 13, "b"), ev(2, 12, "a"), ev(3, 14, "a")], at(15));
    f.endCatchUp();
    const got: string[] = [];
    for (let e = f.take(); e; e = f.take()) got.push(`${e.sessionId}${e.type === "delta" ? "" : e.seq}`);
    expect(got).toEqual(["a2", "b2", "a3"]);
    // A position never moves back.
    f.startAt(at(1));
    expect(f.beginCatchUp()).toBe(at(15));
  });

  it("live deltas pass straight on, and are dropped during a catch-up (the messages carry them)", () => {
    const f = createSessionFeed();
    const d = {
      type: "delta" as const,
      sessionId: "s",
      turnId: "t",
      chunks: [{ kind: "text" as const, text: "hi" }],
    };
    f.live(ev(1));
    f.delta(d);
    expect(drain(f)).toEqual([1, -1]);
    f.beginCatchUp();
    f.delta(d);
    f.endCatchUp();
    expect(drain(f)).toEqual([]);
  });
});
