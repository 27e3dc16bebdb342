// The caller-wide cursor under several writers (issue #25 item 6, docs/protocol.md "Catching up"):
// two host processes on one database write events of the sessions each owns (session.configure
// through the bus), while a third writer keeps transactions open for a while before committing its
// appends (a slow writer elsewhere on the database: its events commit after later-numbered ones).
// Alice and bob follow `events.since` page by page, with random page sizes, while all of that runs
// (either host answers a page). Property (fast-check, random schedules): every reader gets exactly
// the stored events it may read after its starting cursor, each once, each session's in seq order.
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import type { Db } from "../services/host/store/db.ts";
import { createEventStore } from "../services/host/store/event-store.ts";
import type { SessionView } from "../services/protocol/schemas.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./support/processes.ts";
import { eventsSettled } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import type { ParamsOf } from "../services/protocol/methods.ts";

const HOSTS = ["w1", "w2"] as const;
const hosts = new Map<string, ManagedProcess>();

const stack = useStack("evtwohosts", {
  timeoutMs: 120_000,
  setup: async (s) => {
    for (const id of HOSTS)
      hosts.set(
        id,
        spawnTs("services/host/main.ts", hostEnv({ ...s.env, extra: { ...s.env.extra, PI_HOST_ID: id } })),
      );
    await Promise.all([...hosts.values()].map((h) => h.waitForEvent("host.ready", 60_000)));
    return async () => {
      await Promise.all([...hosts.values()].map((h) => h.stop()));
    };
  },
});

afterAll(() => {
  for (const [id, h] of hosts)
    expect([id, h.lines.filter((l) => l.includes('"level":"error"'))]).toEqual([id, []]);
});

const since = (principal: string, params: ParamsOf<"events.since">) =>
  stack.client(principal).call("events.since", params);

async function ownerOf(sessionId: string): Promise<string> {
  const r = await stack.db.pool.query("SELECT host_id FROM session_leases WHERE session_id = $1", [
    sessionId,
  ]);
  return r.rows[0]?.host_id;
}

/** Sessions of alice's, two on each host; bob approves the first of each host's. */
async function sessionsOnBothHosts(): Promise<Array<SessionView & { host: string }>> {
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", {
    name: "two-writers",
    workspaceRoot: stack.newWorkspace("two-writers"),
  });
  await alice.call("projects.members.add", { projectId: project.id, principal: "bob" });
  const out: Array<SessionView & { host: string }> = [];
  const want = new Map<string, number>(HOSTS.map((h) => [h, 2]));
  for (let i = 0; i < 60 && [...want.values()].some((n) => n > 0); i++) {
    const s = await alice.call("session.create", { projectId: project.id, mode: "agent" });
    const host = await ownerOf(s.id);
    if ((want.get(host) ?? 0) === 0) continue;
    if (want.get(host) === 2) await alice.call("session.configure", { sessionId: s.id, approvers: ["bob"] });
    want.set(host, want.get(host)! - 1);
    out.push({ ...s, host });
  }
  if ([...want.values()].some((n) => n > 0)) throw new Error("no two sessions landed on each host");
  return out;
}

/** Reads `principal`'s pages from `after` until `stop()` holds and a page comes back not cut. */
async function follow(principal: string, after: string, limits: number[], stop: () => boolean) {
  const got: Array<{ sessionId: string; seq: number }> = [];
  let cursor = after;
  for (let i = 0; ; i++) {
    const finished = stop();
    const page = await since(principal, { after: cursor, limit: limits[i % limits.length] });
    for (const e of page.events) got.push({ sessionId: e.sessionId, seq: e.seq });
    cursor = page.next;
    if (finished && !page.more) return got;
  }
}

describe("events.since under two host processes and a slow writer", () => {
  it("every page sequence reads each stored event once, none skipped, whatever the interleaving", {
    timeout: 240_000,
  }, async () => {
    const sessions = await sessionsOnBothHosts();
    expect(new Set(sessions.map((s) => s.host))).toEqual(new Set(HOSTS));
    const bobs = new Set(
      sessions.filter((s, i) => sessions.findIndex((t) => t.host === s.host) === i).map((s) => s.id),
    );
    const clock = createClock();
    const toggles = new Map<string, number>();
    const configure = (sessionId: string) => {
      const n = (toggles.get(sessionId) ?? 0) + 1;
      toggles.set(sessionId, n);
      return stack
        .client("alice")
        .call("session.configure", { sessionId, permissionMode: n % 2 ? "ask" : "auto" });
    };

    await fc.assert(
      fc.asyncProperty(
        fc.record({
          // Per session: how many configures, and the pause (ms) before each.
          writes: fc.array(fc.array(fc.integer({ min: 0, max: 15 }), { minLength: 3, maxLength: 12 }), {
            minLength: sessions.length,
            maxLength: sessions.length,
          }),
          // The slow writer: transactions held open this long (ms), each with 1-3 appends.
          slow: fc.array(
            fc.record({ holdMs: fc.integer({ min: 0, max: 250 }), n: fc.integer({ min: 1, max: 3 }) }),
            {
              minLength: 2,
              maxLength: 6,
            },
          ),
          aliceLimits: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
          bobLimits: fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 5 }),
        }),
        async ({ writes, slow, aliceLimits, bobLimits }) => {
          const start = (await since("alice", { after: "now" })).next;
          const bobStart = (await since("bob", { after: "now" })).next;
          let done = false;
          const readers = Promise.all([
            follow("alice", start, aliceLimits, () => done),
            follow("bob", bobStart, bobLimits, () => done),
          ]);
          const hostWrites = sessions.map(async (s, i) => {
            for (const pause of writes[i]!) {
              await new Promise((r) => setTimeout(r, pause));
              await configure(s.id);
            }
          });
          const slowWrites = (async () => {
            for (const [k, t] of slow.entries()) {
              const c = await stack.db.pool.connect();
              try {
                await c.query("BEGIN");
                const store = createEventStore({ db: c as unknown as Db, clock });
                for (let j = 0; j < t.n; j++) {
                  const s = sessions[(k + j) % sessions.length]!;
                  await store.append(
                    s.id,
                    "turn.started",
                    { turnId: `slow-${k}-${j}`, kind: "prompt" },
                    clock.date(),
                  );
                }
                await new Promise((r) => setTimeout(r, t.holdMs));
                await c.query("COMMIT");
              } finally {
                c.release();
              }
            }
          })();
          await Promise.all([...hostWrites, slowWrites]);
          // Stop once everything committed lies below the horizon (a heartbeat's transaction open
          // at that moment holds pages back, never makes one skip): the last pages then hold all.
          await eventsSettled(stack.db.pool);
          done = true;
          const [alices, bobsRead] = await readers;

          // What was stored after each reader's start, in each session's order.
          const stored = await stack.db.pool.query(
            `SELECT session_id, seq FROM session_events WHERE session_id = ANY($1)
               AND (tx, cursor) > (($2::text)::xid8, 0) ORDER BY session_id, seq`,
            [sessions.map((s) => s.id), BigInt(`0x${start.slice(0, 16)}`).toString()],
          );
          const bySession = (xs: Array<{ sessionId: string; seq: number }>) => {
            const m = new Map<string, number[]>();
            for (const x of xs) m.set(x.sessionId, [...(m.get(x.sessionId) ?? []), Number(x.seq)]);
            return m;
          };
          const storedBy = bySession(
            stored.rows.map((r) => ({ sessionId: r.session_id, seq: Number(r.seq) })),
          );
          const aliceBy = bySession(alices.filter((e) => sessions.some((s) => s.id === e.sessionId)));
          const bobBy = bySession(bobsRead);
          for (const s of sessions) {
            const want = storedBy.get(s.id) ?? [];
            expect(want.length).toBeGreaterThan(0);
            // Once each, none skipped, in seq order: exactly the stored list.
            expect([s.id, aliceBy.get(s.id) ?? []]).toEqual([s.id, want]);
            if (bobs.has(s.id)) expect([s.id, bobBy.get(s.id) ?? []]).toEqual([s.id, want]);
            else expect([s.id, bobBy.get(s.id)]).toEqual([s.id, undefined]);
          }
        },
      ),
      { numRuns: 4, endOnFailure: true },
    );
  });
});
