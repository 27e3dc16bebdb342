// Issue #11 clause 3 against the real host: every event carries its session's `seq` (1, 2, 3, ...,
// durable across a SIGKILL of the host), `events.since` pages the caller's stored events by a
// caller-wide cursor in byte-bounded pages, shows only sessions the caller may read at the time of
// the call, and a client that subscribes first and then fetches sees every event exactly once.
import type { Subscription } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import type { SessionEvent } from "../services/protocol/events.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { sessionEventsWildcard } from "../services/protocol/subjects.ts";
import { createClock } from "../services/host/clock.ts";
import { createDb } from "../services/host/store/db.ts";
import {
  createEventStore,
  EVENT_KEEP_PER_SESSION,
  EVENT_PAGE_MAX_BYTES,
  EVENT_STORED_MAX_BYTES,
} from "../services/host/store/event-store.ts";
import { eventsSettled, eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";
import type { ParamsOf } from "../services/protocol/methods.ts";
import { decodeEvent, isEvent, isLive } from "./support/events.ts";

type SinceParams = ParamsOf<"events.since">;

const stack = useStack("evsince", { host: true });

interface Page {
  events: SessionEvent[];
  next: string;
  more: boolean;
}

/** The wire schema types a stored event by its common fields; a page here reads them as session events. */
const since = (principal: string, params: SinceParams = {}): Promise<Page> =>
  stack.client(principal).call("events.since", params) as Promise<Page>;

/** Every page from `after` until `more` is false, once everything committed before is readable. */
async function drain(principal: string, params: SinceParams = {}, after: string | 0 = 0) {
  await eventsSettled(stack.db.pool);
  const pages: Page[] = [];
  let cursor: string | 0 = after;
  for (;;) {
    const page = await since(principal, { ...params, after: cursor });
    pages.push(page);
    cursor = page.next;
    if (!page.more) return { pages, events: pages.flatMap((p) => p.events), next: cursor };
  }
}

async function newSession(approvers: string[] = []) {
  const ws = stack.newWorkspace(`e-${Math.random().toString(36).slice(2, 8)}`);
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name: "e", workspaceRoot: ws });
  // Approvers must be members of the project (docs/security.md).
  for (const principal of approvers)
    await alice.call("projects.members.add", { projectId: project.id, principal });
  return alice.call("session.create", { projectId: project.id, mode: "agent", approvers });
}

/** One configure that changes something (auto, ask, auto, ...): exactly one session.changed event. */
const toggles = new Map<string, number>();
function configure(sessionId: string) {
  const n = toggles.get(sessionId) ?? 0;
  toggles.set(sessionId, n + 1);
  const permissionMode = n % 2 ? "ask" : "auto";
  return stack.client("alice").call("session.configure", { sessionId, permissionMode });
}

const seqsOf = (events: SessionEvent[], sessionId: string) =>
  events.filter((e) => e.sessionId === sessionId).map((e) => e.seq);
const oneTo = (n: number) => Array.from({ length: n }, (_, i) => i + 1);
/** The events of what a test does: the actor's own `machine.state` events also take seqs, in between. */
const withoutMachine = (events: SessionEvent[]) => events.filter((e) => e.type !== "machine.state");
/** The stored ones of the live events: a state the actor only passes through is live only, no seq. */
const kept = (events: SessionEvent[]) => events.filter((e) => !isLive(e));

async function storedSeqs(sessionId: string): Promise<number[]> {
  const r = await stack.db.pool.query(
    "SELECT seq FROM session_events WHERE session_id = $1 ORDER BY cursor",
    [sessionId],
  );
  return r.rows.map((x) => Number(x.seq));
}

/** How many of the session's stored events are not `machine.state`. */
/** The session's stored session.changed events (a session made with approvers has one approvers.added too). */
async function storedChanges(sessionId: string): Promise<number> {
  const r = await stack.db.pool.query(
    "SELECT count(*)::int AS n FROM session_events WHERE session_id = $1 AND type = 'session.changed'",
    [sessionId],
  );
  return Number(r.rows[0].n);
}

describe("event sequences", () => {
  it("every event carries its session's seq, 1, 2, 3 ...; a SIGKILLed host's successor goes on without repeating one", async () => {
    const s1 = await newSession();
    const s2 = await newSession();
    const live1 = stack.events(s1.id);
    for (let i = 0; i < 3; i++) await configure(s1.id);
    await configure(s2.id);
    await eventually(async () => kept(live1.all).length === (await storedSeqs(s1.id)).length);
    const n1 = kept(live1.all).length;
    expect(kept(live1.all).map((e) => e.seq)).toEqual(oneTo(n1));
    expect(withoutMachine(live1.all).map((e) => e.type)).toEqual([
      "session.changed",
      "session.changed",
      "session.changed",
    ]);
    // Sequences are per session: s2 starts at 1 although s1 is further on.
    await eventually(async () => (await storedChanges(s2.id)) === 1);
    const s2Seqs = await storedSeqs(s2.id);
    expect(s2Seqs).toEqual(oneTo(s2Seqs.length));
    expect(s2Seqs.length).toBeLessThan(n1);
    const before = await drain("alice", { sessionId: s1.id });

    await stack.host!.kill();
    await stack.startHost();
    await configure(s1.id);
    await configure(s1.id);
    await eventually(async () => withoutMachine(live1.all).length === 5);
    await eventually(async () => kept(live1.all).length === (await storedSeqs(s1.id)).length);
    const n2 = kept(live1.all).length;
    expect(kept(live1.all).map((e) => e.seq)).toEqual(oneTo(n2));
    expect(await storedSeqs(s1.id)).toEqual(oneTo(n2));
    // The cursor from before the restart resumes right after what was read.
    const after = await drain("alice", { sessionId: s1.id }, before.next);
    expect(after.events.map((e) => e.seq)).toEqual(oneTo(n2).slice(n1));
    // What a page returns is the live event, field for field.
    expect(after.events).toEqual(kept(live1.all).slice(n1));
    live1.stop();
  });
});

describe("events.since pages", () => {
  it("pages are bounded in bytes and resume by cursor with no gap and no duplicate", async () => {
    const s = await newSession();
    const a: TurnAssignment = await promptAndClaim(stack, s.id);
    const live = stack.events(s.id);
    // 9 messages of 100 KiB: about 900 KiB of events, more than one page may carry.
    const text = (i: number) => `${String(i)}`.padEnd(100 * 1024, "x");
    for (let i = 0; i < 9; i++) {
      await stack.agentClient.call("append", {
        turnId: a.turnId,
        token: a.token,
        messages: [{ role: "assistant", content: [{ type: "text", text: text(i) }], timestamp: 1 }],
      });
    }
    await live.waitFor(isEvent("message", (e) => e.text === text(8)));
    const last = Math.max(...kept(live.all).map((e) => e.seq));

    const { pages, events } = await drain("alice", { sessionId: s.id });
    expect(pages.length).toBeGreaterThan(1);
    for (const p of pages) {
      expect(Buffer.byteLength(JSON.stringify(p))).toBeLessThanOrEqual(EVENT_PAGE_MAX_BYTES + 64 * 1024);
    }
    // Every event once, in seq order, with its full text.
    expect(events.map((e) => e.seq)).toEqual(oneTo(last));
    const messages = events.filter(isEvent("message"));
    expect(messages.map((m) => m.text)).toEqual(oneTo(9).map((i) => text(i - 1)));
    // A count limit cuts pages too, and the cursors chain without a gap.
    const small = await drain("alice", { sessionId: s.id, limit: 2 });
    expect(small.pages.every((p) => p.events.length <= 2)).toBe(true);
    expect(small.events.map((e) => e.seq)).toEqual(oneTo(last));
    // Nothing after the last cursor (the next position may move on, to the horizon).
    const tail = await since("alice", { sessionId: s.id, after: small.next });
    expect(tail).toMatchObject({ events: [], more: false });
    expect(tail.next >= small.next).toBe(true);
    live.stop();
  });

  it("a body over the stored bound is stored with its short fields and truncated: true; live it is whole", async () => {
    const s = await newSession();
    const a = await promptAndClaim(stack, s.id);
    const live = stack.events(s.id);
    const big = "y".repeat(EVENT_STORED_MAX_BYTES + 1024);
    await stack.agentClient.call("append", {
      turnId: a.turnId,
      token: a.token,
      messages: [{ role: "assistant", content: [{ type: "text", text: big }], timestamp: 1 }],
    });
    const liveMessage = await live.waitFor(isEvent("message"));
    expect(liveMessage.text).toBe(big);
    const stored = (await drain("alice", { sessionId: s.id })).events.find((e) => e.seq === liveMessage.seq);
    expect(stored).toMatchObject({ type: "message", turnId: a.turnId, role: "assistant", truncated: true });
    expect(stored).not.toHaveProperty("text");
    live.stop();
  });

  it("malformed params are INVALID_PARAMS", async () => {
    for (const bad of [
      { after: -1 },
      { limit: 0 },
      { limit: 501 },
      { after: "1" },
      // Positions past what Postgres stores (2^63 and more) are refused, never a host failure.
      { after: "f".repeat(32) },
      { after: "0".repeat(16) + "8" + "0".repeat(15) },
      { after: "now " },
      { sessionId: "a b" },
      { x: 1 },
    ]) {
      expect(await refusalCode(stack.client("alice").raw("events.since", bad))).toBe("INVALID_PARAMS");
    }
  });
});

describe("access", () => {
  it("carol gets none of alice's events; bob sees them only while he is an approver", async () => {
    const s = await newSession(["bob"]);
    await configure(s.id);
    await configure(s.id);
    await eventually(async () => (await storedChanges(s.id)) === 2);
    const n = (await storedSeqs(s.id)).length;
    // Carol: nothing caller-wide, FORBIDDEN when she names the session, whatever cursor she tries.
    for (const after of [0, "0".repeat(31) + "1", "0".repeat(16) + "7" + "f".repeat(15)] as const) {
      const page = await drain("carol", {}, after);
      expect(page.events.filter((e) => e.sessionId === s.id)).toEqual([]);
    }
    expect(await refusalCode(since("carol", { sessionId: s.id }))).toBe("FORBIDDEN");
    expect(await refusalCode(since("carol", { sessionId: "ses_nope" }))).toBe("SESSION_NOT_FOUND");
    // Bob, an approver, reads them; removed, he reads none at once, old cursor or not.
    expect(seqsOf((await drain("bob")).events, s.id)).toEqual(oneTo(n));
    await stack.client("alice").call("session.configure", { sessionId: s.id, approvers: [] });
    expect(seqsOf((await drain("bob")).events, s.id)).toEqual([]);
    expect(await refusalCode(since("bob", { sessionId: s.id }))).toBe("FORBIDDEN");
    // Alice still reads all of them (the approvers change is an event too, and naming bob at create).
    const alices = (await drain("alice", { sessionId: s.id })).events;
    expect(seqsOf(alices, s.id)).toEqual(oneTo((await storedSeqs(s.id)).length));
    expect(withoutMachine(alices).map((e) => e.type)).toEqual([
      "approvers.added",
      "session.changed",
      "session.changed",
      "session.changed",
    ]);
  });

  it("an approver removed from the project's members reads none of its events at once", async () => {
    const s = await newSession(["bob"]);
    await configure(s.id);
    await eventually(async () => (await storedChanges(s.id)) === 1);
    expect(seqsOf((await drain("bob")).events, s.id)).toEqual(oneTo((await storedSeqs(s.id)).length));
    await stack.client("alice").call("projects.members.remove", { projectId: s.projectId, principal: "bob" });
    expect(seqsOf((await drain("bob")).events, s.id)).toEqual([]);
    expect(await refusalCode(since("bob", { sessionId: s.id }))).toBe("FORBIDDEN");
  });
});

describe("subscribe first, then fetch", () => {
  it("a client that was away sees every event exactly once, the overlap dropped by (sessionId, seq)", async () => {
    const s = await newSession();
    const delivered: SessionEvent[] = [];
    const seen = new Set<string>();
    let dropped = 0;
    const take = (e: SessionEvent) => {
      if (isLive(e)) return; // live only: never stored, nothing to fetch
      const key = `${e.sessionId}/${e.seq}`;
      if (seen.has(key)) dropped++;
      else {
        seen.add(key);
        delivered.push(e);
      }
    };
    const subscribe = (): Subscription =>
      stack.nc.subscribe(sessionEventsWildcard(stack.env.prefix, "alice", s.id), {
        callback: (_err, msg) => take(decodeEvent(msg.data)),
      });
    let sub = subscribe();
    await stack.nc.flush();
    await configure(s.id);
    await configure(s.id);
    await eventually(async () => withoutMachine(delivered).length === 2);
    let cursor = (await drain("alice", { sessionId: s.id })).next;

    // The gap: the client is away while three configures happen.
    sub.unsubscribe();
    for (let i = 0; i < 3; i++) await configure(s.id);
    await eventually(async () => (await storedChanges(s.id)) === 5);
    const gapEnd = (await storedSeqs(s.id)).length;
    // Back: subscribe first; one more event arrives live before the fetch, so it comes both ways.
    sub = subscribe();
    await stack.nc.flush();
    await configure(s.id);
    await eventually(async () => delivered.some((e) => e.seq > gapEnd));
    // Events keep coming while the client fetches.
    const during = (async () => {
      await configure(s.id);
      await configure(s.id);
    })();
    const fetched = await drain("alice", { sessionId: s.id }, cursor);
    for (const e of fetched.events) take(e);
    cursor = fetched.next;
    await during;
    const total = (await storedSeqs(s.id)).length;
    await eventually(async () => delivered.length === total, 10_000, `all ${total} events delivered`);
    for (const e of (await drain("alice", { sessionId: s.id }, cursor)).events) take(e);

    expect(delivered.map((e) => e.seq).sort((x, y) => x - y)).toEqual(oneTo(total));
    expect(await storedSeqs(s.id)).toEqual(oneTo(total));
    expect(withoutMachine(delivered)).toHaveLength(8);
    expect(dropped).toBeGreaterThanOrEqual(1);
    sub.unsubscribe();
  });
});

describe("the cursor under concurrent writers", () => {
  it("a reader following the cursor while many writers commit misses nothing and sees nothing twice", async () => {
    const sessions = [await newSession(), await newSession(), await newSession()];
    const db = createDb(stack.db.url, { max: 8 });
    try {
      const clock = createClock();
      const store = createEventStore({ db, clock });
      const start = (await since("alice")).next;
      let done = false;
      const read: Array<{ sessionId: string; seq: number }> = [];
      const reader = (async () => {
        let cursor = start;
        const until = Date.now() + 30_000;
        for (;;) {
          const finished = done;
          const page = await store.since("alice", { after: cursor, limit: 500 });
          for (const e of page.events) read.push({ sessionId: String(e.sessionId), seq: Number(e.seq) });
          cursor = page.next;
          // A page holds only what lies below the horizon: a transaction still open (a write of the
          // host's own, say) holds it back a moment, so read on until all 240 are in, or too long.
          if (finished && !page.more && (read.length >= 240 || Date.now() > until)) return;
        }
      })();
      // 240 writes, 8 at a time across three sessions: cursors are taken out of commit order
      // unless the store orders them.
      await Promise.all(
        Array.from({ length: 8 }, async (_, w) => {
          for (let i = 0; i < 30; i++) {
            const s = sessions[(w + i) % 3]!;
            await store.append(s.id, "turn.started", { turnId: `t${w}-${i}`, kind: "prompt" }, clock.date());
          }
        }),
      );
      done = true;
      await reader;
      for (const s of sessions) {
        const mine = read.filter((e) => e.sessionId === s.id).map((e) => e.seq);
        expect(mine).toEqual(await storedSeqs(s.id));
        expect(mine).toEqual(oneTo(80));
      }
    } finally {
      await db.end();
    }
  });

  it("a transaction that got its id before waiting for the session's counter row still pages in seq order", async () => {
    // The two-host property test's counterexample, made deterministic: `older` takes its transaction
    // id first (a write elsewhere, as session.configure updates its row), `younger` appends to the
    // session and holds its transaction open; `older` then appends, waits on the counter row, and
    // gets the next seq. Both commit. A page must return younger's seq before older's (a client
    // drops a seq at or below one it has seen: docs/protocol.md "Catching up").
    const s = await newSession();
    const db = createDb(stack.db.url, { max: 2 });
    const older = await db.connect();
    const younger = await db.connect();
    try {
      const clock = createClock();
      const start = (await since("alice")).next;
      await older.query("BEGIN");
      await older.query("SELECT pg_current_xact_id()");
      await younger.query("BEGIN");
      await createEventStore({ db: younger as unknown as typeof db, clock }).append(
        s.id,
        "turn.started",
        { turnId: "young", kind: "prompt" },
        clock.date(),
      );
      const olderAppend = createEventStore({ db: older as unknown as typeof db, clock }).append(
        s.id,
        "turn.started",
        { turnId: "old", kind: "prompt" },
        clock.date(),
      );
      await new Promise((r) => setTimeout(r, 100));
      await younger.query("COMMIT");
      const o = await olderAppend;
      await older.query("COMMIT");
      const { events } = await drain("alice", { sessionId: s.id }, start);
      const turns = events.filter(isEvent("turn.started"));
      expect(turns.map((e) => [e.turnId, e.seq])).toEqual([
        ["young", o.seq - 1],
        ["old", o.seq],
      ]);
      expect(turns[0]!.cursor < turns[1]!.cursor).toBe(true);
    } finally {
      older.release();
      younger.release();
      await db.end();
    }
  });
});

describe("the event store's bounds", () => {
  it("prunes by age (host clock) and keeps the newest events of a session; seq is never reused", async () => {
    const s = await newSession();
    const db = createDb(stack.db.url, { max: 2 });
    try {
      const clock = createClock();
      const store = createEventStore({ db, clock });
      const old = new Date(clock.now() - 8 * 24 * 3600_000);
      await store.append(s.id, "turn.started", { turnId: "t-old", kind: "prompt" }, old);
      await store.append(s.id, "turn.started", { turnId: "t-new", kind: "prompt" }, clock.date());
      expect(await store.pruneByAge()).toBe(1);
      expect(await storedSeqs(s.id)).toEqual([2]);
      // All pruned: the counter on the session row still goes on from 3.
      await db.query("DELETE FROM session_events WHERE session_id = $1", [s.id]);
      expect(
        (await store.append(s.id, "turn.started", { turnId: "t3", kind: "prompt" }, clock.date())).seq,
      ).toBe(3);
      // Count bound, off the append: the pruner keeps the newest EVENT_KEEP_PER_SESSION sequence
      // numbers of each session this host owns; an append never deletes anything.
      await db.query("UPDATE session_event_seqs SET last_seq = $2 WHERE session_id = $1", [
        s.id,
        EVENT_KEEP_PER_SESSION + 98,
      ]);
      await store.append(s.id, "turn.started", { turnId: "t4", kind: "prompt" }, clock.date());
      expect(await storedSeqs(s.id)).toEqual([3, EVENT_KEEP_PER_SESSION + 99]);
      // Another host's session is left to that host's pruner.
      expect(await store.pruneByCount("some-other-host")).toBe(0);
      expect(await store.pruneByCount(stack.agentClient.host)).toBe(1);
      expect(await storedSeqs(s.id)).toEqual([EVENT_KEEP_PER_SESSION + 99]);
      await store.append(s.id, "turn.started", { turnId: "t5", kind: "prompt" }, clock.date());
      expect(await storedSeqs(s.id)).toEqual([EVENT_KEEP_PER_SESSION + 99, EVENT_KEEP_PER_SESSION + 100]);
    } finally {
      await db.end();
    }
  });
});
