// One session's events as a follower sees them (docs/protocol.md "Catching up"): live events, and
// after a reconnect the ones `events.since` returns after the last cursor seen, merged in `seq`
// order with every duplicate dropped. Pure; cli-bus.ts feeds it.
import type { SessionEvent } from "../protocol/events.ts";

export function createSessionFeed() {
  let maxSeq = 0;
  let lastCursor = 0;
  let catchingUp = false;
  let held: SessionEvent[] = [];
  const ready: SessionEvent[] = [];

  const bySeq = (a: SessionEvent, b: SessionEvent) => (a.seq ?? 0) - (b.seq ?? 0);

  function accept(e: SessionEvent): void {
    // An event without a sequence (an older host) cannot be de-duplicated: passed on as it is.
    if (typeof e.seq === "number") {
      if (e.seq <= maxSeq) return;
      maxSeq = e.seq;
    }
    if (typeof e.cursor === "number" && e.cursor > lastCursor) lastCursor = e.cursor;
    ready.push(e);
  }

  return {
    /** A live event: passed on, or held while a catch-up is under way. */
    live(e: SessionEvent): void {
      if (catchingUp) held.push(e);
      else accept(e);
    },
    /** Starts a catch-up; returns the cursor to ask `events.since` after (0: nothing seen yet). */
    beginCatchUp(): number {
      catchingUp = true;
      return lastCursor;
    },
    /** A page of the catch-up, oldest first. */
    fetched(events: readonly SessionEvent[]): void {
      for (const e of [...events].sort(bySeq)) accept(e);
    },
    /** Ends the catch-up (done or failed): the held live events follow, each once. */
    endCatchUp(): void {
      catchingUp = false;
      const h = held.sort(bySeq);
      held = [];
      for (const e of h) accept(e);
    },
    /** The next event to show, in order, or undefined. */
    take(): SessionEvent | undefined {
      return ready.shift();
    },
  };
}

export type SessionFeed = ReturnType<typeof createSessionFeed>;
