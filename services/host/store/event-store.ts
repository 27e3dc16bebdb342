// Rows of session events (migration 11): each event gets its session's next sequence number and a
// caller-wide cursor in one transaction; `events.since` pages read them back for one principal.
// What is published live is the same body; this module owns only the rows.
import type { Clock } from "../clock.ts";
import { type Db, withTransaction } from "./db.ts";
import { memberApproversSql, ownsOrApprovesSql } from "./project-members.ts";

/** Stored body bound: a bigger event keeps its short fields and `truncated: true` (docs/protocol.md). */
export const EVENT_STORED_MAX_BYTES = 128 * 1024;
/** A page of `events.since` carries at most this many bytes of bodies (at least one event). */
export const EVENT_PAGE_MAX_BYTES = 512 * 1024;
/** What a page counts per event besides its body: type, sessionId, at, seq and the JSON around them. */
const EVENT_ENVELOPE_BYTES = 160;
/** Events kept per session: older sequence numbers are pruned as new ones are written. */
export const EVENT_KEEP_PER_SESSION = 5_000;
/** Events older than this (host clock) are pruned. */
export const EVENT_KEEP_MS = 7 * 24 * 3600_000;
/** A string field longer than this is dropped from a truncated stored body. */
const TRUNCATED_KEEP_CHARS = 1024;
/** Class id of the advisory lock that orders cursors by commit (any other class id is unrelated). */
const CURSOR_LOCK = [1885956212, 1] as const;
/** The per-session count bound is applied every this many sequence numbers. */
const PRUNE_EVERY_SEQ = 100;

export interface EventPage {
  events: Array<Record<string, unknown>>;
  next: number;
  more: boolean;
}

/** The body as stored: within EVENT_STORED_MAX_BYTES, else its short fields and `truncated`. */
export function storedBody(body: Record<string, unknown>): { json: string; bytes: number } {
  const json = JSON.stringify(body);
  const bytes = Buffer.byteLength(json);
  if (bytes <= EVENT_STORED_MAX_BYTES) return { json, bytes };
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(body)) {
    const short =
      typeof v === "string" ? v.length <= TRUNCATED_KEEP_CHARS : v === null || typeof v !== "object";
    if (short) kept[k] = v;
  }
  const small = JSON.stringify({ ...kept, truncated: true, byteSize: bytes });
  return { json: small, bytes: Buffer.byteLength(small) };
}

export function createEventStore({ db, clock }: { db: Db; clock: Clock }) {
  return {
    /**
     * Writes one event: the session's counter + 1 is its `seq` (never handed out twice, pruned or
     * not), and the cursor is allocated under CURSOR_LOCK so cursors become visible in their order.
     * The counter row is locked first, the cursor lock last: nothing waits on the cursor lock while
     * holding it. Refused (throws) when the session is gone or the write is fenced.
     */
    async append(sessionId: string, type: string, body: Record<string, unknown>, at: Date) {
      const stored = storedBody(body);
      return withTransaction(db, async (tx) => {
        // A session that is gone fails the foreign key: the event is refused (thrown), nothing kept.
        const s = await tx.query(
          `INSERT INTO session_event_seqs (session_id, last_seq) VALUES ($1, 1)
           ON CONFLICT (session_id) DO UPDATE SET last_seq = session_event_seqs.last_seq + 1
           RETURNING last_seq`,
          [sessionId],
        );
        const seq = Number(s.rows[0].last_seq);
        await tx.query("SELECT pg_advisory_xact_lock($1, $2)", [...CURSOR_LOCK]);
        const r = await tx.query(
          `INSERT INTO session_events (session_id, seq, type, body, bytes, at)
           VALUES ($1, $2, $3, $4::jsonb, $5, $6) RETURNING cursor`,
          [sessionId, seq, type, stored.json, stored.bytes, at],
        );
        // Who may receive it live, as of this commit: the owner, and the approvers still members of
        // the project (the actor's cached audience may predate a member's removal).
        const a = await tx.query<{ approvers: string[] }>(
          `SELECT ${memberApproversSql("s")} AS approvers FROM sessions s WHERE s.id = $1`,
          [sessionId],
        );
        const approvers = a.rows[0]?.approvers ?? [];
        if (seq % PRUNE_EVERY_SEQ === 0)
          await tx.query("DELETE FROM session_events WHERE session_id = $1 AND seq <= $2", [
            sessionId,
            seq - EVENT_KEEP_PER_SESSION,
          ]);
        return { seq, cursor: Number(r.rows[0].cursor), approvers };
      });
    },

    /**
     * The principal's events after `after`, oldest first: those of sessions the principal owns or
     * approves now, as a member of the project (the same check as session.get), at most
     * `limit` events and `maxBytes` of bodies (the first event always, though storedBody keeps every
     * body far below a page). `next` is the last cursor returned, or
     * `after` for an empty page; `more` says the page was cut.
     */
    async since(
      principal: string,
      p: { after: number; sessionId?: string; limit: number },
      maxBytes = EVENT_PAGE_MAX_BYTES,
    ): Promise<EventPage> {
      const r = await db.query(
        `WITH page AS (
           SELECT e.cursor, e.bytes FROM session_events e JOIN sessions s ON s.id = e.session_id
            WHERE e.cursor > $2 AND ${ownsOrApprovesSql("s", "$1")}
              AND ($3::text IS NULL OR e.session_id = $3)
            ORDER BY e.cursor LIMIT $4 + 1
         ), sized AS (
           SELECT cursor, bytes, sum(bytes + $5) OVER (ORDER BY cursor) AS running,
                  row_number() OVER (ORDER BY cursor) AS n FROM page
         )
         SELECT e.cursor, e.session_id, e.seq, e.type, e.at, e.body, z.n, z.running
           FROM sized z JOIN session_events e ON e.cursor = z.cursor
          ORDER BY e.cursor`,
        [principal, p.after, p.sessionId ?? null, p.limit, EVENT_ENVELOPE_BYTES],
      );
      const events: Array<Record<string, unknown>> = [];
      let next = p.after;
      let more = false;
      for (const row of r.rows) {
        const fits = Number(row.n) === 1 || Number(row.running) <= maxBytes;
        if (Number(row.n) > p.limit || !fits) {
          more = true;
          break;
        }
        // Envelope fields last: a body field never overrides them.
        events.push({
          ...row.body,
          type: row.type,
          sessionId: row.session_id,
          at: new Date(row.at).toISOString(),
          seq: Number(row.seq),
          cursor: Number(row.cursor),
        });
        next = Number(row.cursor);
      }
      return { events, next, more };
    },

    /** Removes the events older than EVENT_KEEP_MS by the host clock; returns how many. */
    async pruneByAge(keepMs = EVENT_KEEP_MS): Promise<number> {
      const r = await db.query("DELETE FROM session_events WHERE at < $1", [new Date(clock.now() - keepMs)]);
      return r.rowCount ?? 0;
    },
  };
}

export type EventStore = ReturnType<typeof createEventStore>;
