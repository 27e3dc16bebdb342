// Session events as a follower sees them (docs/protocol.md "Catching up"): live events, and after a
// reconnect the ones `events.since` returns after the last page position read (never a live event's
// cursor: an event may go out live before an earlier transaction's event commits), merged in `seq`
// order with every duplicate dropped. One feed may carry many sessions (`pihost watch`): sequences are per
// session, the cursor is the caller's. Live deltas (never stored, never numbered) pass straight on,
// except during a catch-up, when the `message` events being fetched say the same. Pure; the CLI's
// bus adapter and the web console feed it.
import type { SessionEvent } from "./events.ts";

/** One message of `<prefix>.live.<principal>.<sessionId>.delta` (docs/protocol.md "Live output"). */
export interface LiveDelta {
  type: "delta";
  sessionId: string;
  turnId: string;
  chunks: Array<{ kind: "text" | "thinking" | "toolCall"; text: string; toolCallId?: string }>;
  dropped?: number;
}

export type FeedItem = SessionEvent | LiveDelta;

export function isDelta(item: FeedItem): item is LiveDelta {
  return item.type === "delta";
}

export function createSessionFeed() {
  const maxSeq = new Map<string, number>();
  /** Where `events.since` continues: the last page's `next` (or a `now` read's); null: none yet. */
  let position: string | null = null;
  let catchingUp = false;
  let held: SessionEvent[] = [];
  const ready: FeedItem[] = [];

  // Across sessions the cursor orders events (its strings compare as the store orders them);
  // within one, the sequence does (they agree).
  const order = (a: SessionEvent, b: SessionEvent) => {
    const [x, y] = [String(a.cursor ?? ""), String(b.cursor ?? "")];
    return x < y ? -1 : x > y ? 1 : (a.seq ?? 0) - (b.seq ?? 0);
  };

  function accept(e: SessionEvent): void {
    // An event without a sequence (an older host) cannot be de-duplicated: passed on as it is.
    if (typeof e.seq === "number") {
      if (e.seq <= (maxSeq.get(e.sessionId) ?? 0)) return;
      maxSeq.set(e.sessionId, e.seq);
    }
    ready.push(e);
  }

  return {
    /** A live event: passed on, or held while a catch-up is under way. */
    live(e: SessionEvent): void {
      if (catchingUp) held.push(e);
      else accept(e);
    },
    /** A live delta: passed on at once; dropped during a catch-up (the fetched messages carry it). */
    delta(d: LiveDelta): void {
      if (!catchingUp) ready.push(d);
    },
    /**
     * Where a catch-up starts: a `now` read made right after subscribing (docs/protocol.md
     * "Catching up"); every later page moves it on.
     */
    startAt(next: string): void {
      if (position === null || next > position) position = next;
    },
    /** Starts a catch-up; returns the position to ask `events.since` after (null: none known yet). */
    beginCatchUp(): string | null {
      catchingUp = true;
      return position;
    },
    /** A page of the catch-up, oldest first, and its `next`: where the following page starts. */
    fetched(events: readonly SessionEvent[], next?: string): void {
      for (const e of [...events].sort(order)) accept(e);
      if (next !== undefined && (position === null || next > position)) position = next;
    },
    /** Ends the catch-up (done or failed): the held live events follow, each once. */
    endCatchUp(): void {
      catchingUp = false;
      const h = held.sort(order);
      held = [];
      for (const e of h) accept(e);
    },
    /** The next item to show, in order, or undefined. */
    take(): FeedItem | undefined {
      return ready.shift();
    },
  };
}

export type SessionFeed = ReturnType<typeof createSessionFeed>;
