import { describe, expect, it } from "vitest";
import type { SessionEvent } from "../protocol/events.ts";
import { createSessionFeed } from "./session-feed.ts";

const ev = (seq: number, cursor = seq * 10): SessionEvent =>
  ({
    type: "message",
    sessionId: "s",
    at: "",
    seq,
    cursor,
    turnId: "t",
    role: "assistant",
    text: `${seq}`,
  }) as SessionEvent;

function drain(feed: ReturnType<typeof createSessionFeed>): number[] {
  const seqs: number[] = [];
  for (let e = feed.take(); e; e = feed.take()) seqs.push(e.seq);
  return seqs;
}

describe("createSessionFeed", () => {
  it("passes live events on once, in order", () => {
    const f = createSessionFeed();
    for (const s of [1, 2, 2, 3]) f.live(ev(s));
    expect(drain(f)).toEqual([1, 2, 3]);
  });

  it("after a reconnect: asks after the last cursor seen, fills the gap, drops what came both ways", () => {
    const f = createSessionFeed();
    f.live(ev(1));
    f.live(ev(2));
    expect(drain(f)).toEqual([1, 2]);
    // Disconnected while 3..5 were published; 5 and 6 arrive live during the catch-up.
    expect(f.beginCatchUp()).toBe(20);
    f.live(ev(6));
    f.live(ev(5));
    f.fetched([ev(3), ev(4), ev(5)]);
    expect(drain(f)).toEqual([3, 4, 5]);
    f.endCatchUp();
    expect(drain(f)).toEqual([6]);
    f.live(ev(4));
    f.live(ev(7));
    expect(drain(f)).toEqual([7]);
  });

  it("a catch-up before any event starts from cursor 0; a failed one still releases what was held", () => {
    const f = createSessionFeed();
    expect(f.beginCatchUp()).toBe(0);
    f.live(ev(2));
    f.live(ev(1));
    f.endCatchUp();
    expect(drain(f)).toEqual([1, 2]);
  });
});
