// Rows of session events (migrations 11, 16): each event gets its session's next sequence number,
// and a caller-wide position made of the id of the transaction that wrote it and a position within
// it; `events.since` pages read them back for one principal, only below the visibility horizon,
// so positions appear in commit order without any lock shared by writers (docs/architecture.md
// "Events"). What is published live is the same body; this module owns only the rows (their pruning:
// event-prune.ts).
import type { StoredSessionEvent } from "../../protocol/schemas.ts";
import type { Clock } from "../clock.ts";
import { type Db, prepared } from "./db.ts";
import { EVENT_KEEP_MS, EVENT_KEEP_PER_SESSION, pruneByAge, pruneByCount } from "./event-prune.ts";
import { memberApproversSql, ownsOrApprovesSql } from "./project-members.ts";

export { EVENT_KEEP_MS, EVENT_KEEP_PER_SESSION };

/** Stored body bound: a bigger event keeps its short fields and `truncated: true` (docs/protocol.md). */
export const EVENT_STORED_MAX_BYTES = 128 * 1024;
/** A page of `events.since` carries at most this many bytes of bodies (at least one event). */
export const EVENT_PAGE_MAX_BYTES = 512 * 1024;
/** What a page counts per event besides its body: type, sessionId, at, seq and the JSON around them. */
const EVENT_ENVELOPE_BYTES = 160;
/** A string field longer than this is dropped from a truncated stored body. */
const TRUNCATED_KEEP_CHARS = 1024;

/**
 * An event's caller-wide position on the wire: 32 lowercase hex digits, the writing transaction's id
 * (16) then the position within it (16), so comparing two cursors as strings orders them as the
 * store does. `CURSOR_START` (or 0) reads from the oldest event kept.
 */
export type EventCursor = string;
export const CURSOR_START = "0";

/** The cursor of a row: its transaction id (xid8 as decimal text) and its position. */
export function cursorOf(tx: string, position: string | number): EventCursor {
  const hex = (v: bigint) => v.toString(16).padStart(16, "0");
  return hex(BigInt(tx)) + hex(BigInt(position));
}

/** The (transaction, position) a cursor names, as decimal text for the query; the start is (0, 0). */
function positionOf(cursor: EventCursor | 0): [string, string] {
  if (cursor === 0 || cursor === CURSOR_START) return ["0", "0"];
  return [BigInt(`0x${cursor.slice(0, 16)}`).toString(), BigInt(`0x${cursor.slice(16)}`).toString()];
}

export interface EventPage {
  events: StoredSessionEvent[];
  next: EventCursor;
  more: boolean;
}

/**
 * The counter row's change of `last_tx`: a row's position is the greater of its transaction's id
 * and the last writer's of the session (migration 18), so that within a session positions grow with
 * seq even when this transaction got its id before it waited for the counter row. Never below the
 * writer's own id: a row below the horizon still belongs to a transaction that has ended.
 */
const LAST_TX = "last_tx = greatest(pg_current_xact_id(), session_event_seqs.last_tx)";

/**
 * The common table expressions that append one event inside a bigger statement (the tool call's
 * record writes its `tool.result` this way): `$p, $p+1, ...` are session id, type, stored body (json
 * text), its bytes and the time; `ev_<tag>` returns `seq`, `cursor` and `tx` (text) of the row. The
 * session's counter row is the only row it locks: sessions never wait for each other.
 */
export function appendEventCtes(first: number, tag = "e"): string {
  const [sid, type, body, bytes, at] = [0, 1, 2, 3, 4].map((i) => `$${first + i}`);
  return `seq_${tag} AS (
       INSERT INTO session_event_seqs (session_id, last_seq, last_tx) VALUES (${sid}, 1, pg_current_xact_id())
       ON CONFLICT (session_id) DO UPDATE SET last_seq = session_event_seqs.last_seq + 1, ${LAST_TX}
       RETURNING last_seq, last_tx
     ), ev_${tag} AS (
       INSERT INTO session_events (session_id, seq, type, body, bytes, at, tx)
       SELECT ${sid}, last_seq, ${type}, ${body}::jsonb, ${bytes}, ${at}, last_tx FROM seq_${tag}
       RETURNING seq, cursor, tx::text AS tx
     )`;
}

/** One event of a bigger statement: its type, and its body as an SQL expression (jsonb). */
export interface EventSql {
  type: string;
  body: string;
}

/**
 * The common table expressions that append `events`, in this order, for the session `sid` (an SQL
 * expression) at `at`, only when `when` (an SQL condition, say on the statement's own row change)
 * holds: one change of the session's counter row for all of them. `evs_<tag>` returns each appended
 * row (`seq`, `cursor`, `tx` as text, `type`, `body`); `appendedEventsColumn` collects them.
 */
export function appendEventsCtes(
  sid: string,
  at: string,
  events: readonly EventSql[],
  when: string,
  tag = "e",
): string {
  const n = events.length;
  const values = events
    .map((e, i) => {
      if (!/^[a-z][a-z.]*$/.test(e.type)) throw new Error(`not an event type: ${e.type}`);
      return `(${i + 1}, '${e.type}', (${e.body})::jsonb)`;
    })
    .join(", ");
  return `seqs_${tag} AS (
       INSERT INTO session_event_seqs (session_id, last_seq, last_tx)
       SELECT ${sid}, ${n}, pg_current_xact_id() WHERE ${when}
       ON CONFLICT (session_id) DO UPDATE SET last_seq = session_event_seqs.last_seq + ${n}, ${LAST_TX}
       RETURNING last_seq, last_tx
     ), evs_${tag} AS (
       INSERT INTO session_events (session_id, seq, type, body, bytes, at, tx)
       SELECT ${sid}, q.last_seq - ${n} + x.i, x.type, x.body, octet_length(x.body::text), ${at}, q.last_tx
         FROM seqs_${tag} q, (VALUES ${values}) AS x(i, type, body)
       RETURNING seq, cursor, tx::text AS tx, type, body
     )`;
}

/** The SELECT column of `appendEventsCtes`'s rows, oldest first, as JSON (`AS events`). */
export function appendedEventsColumn(tag = "e"): string {
  return `(SELECT coalesce(json_agg(json_build_object('seq', seq, 'cursor', cursor, 'tx', tx, 'type', type, 'body', body)
            ORDER BY seq), '[]'::json) FROM evs_${tag}) AS events`;
}

/** One appended event as a statement returns it (appendedEventsColumn), ready to publish. */
export interface WrittenEvent {
  type: string;
  body: Record<string, unknown>;
  seq: number;
  cursor: EventCursor;
}

export function writtenEvents(column: unknown): WrittenEvent[] {
  return (
    (column as Array<{
      seq: number;
      cursor: string | number;
      tx: string;
      type: string;
      body: Record<string, unknown>;
    }>) ?? []
  ).map((e) => ({ type: e.type, body: e.body, seq: Number(e.seq), cursor: cursorOf(e.tx, e.cursor) }));
}

/** The parameters of `appendEventCtes`, in its order. */
export function appendEventParams(sessionId: string, type: string, body: Record<string, unknown>, at: Date) {
  const stored = storedBody(body);
  return [sessionId, type, stored.json, stored.bytes, at];
}

/** What an append returns: the event's numbers and who may receive it live as of its commit. */
export interface AppendedEvent {
  seq: number;
  cursor: EventCursor;
  approvers: string[];
}

/**
 * A statement that appends events with the rows they belong to, as the event publisher runs and
 * publishes it (sessions/events/event-publisher.ts `publishRows`): what it appended, who may
 * receive it as of its commit (`approversColumn`), and its own value.
 */
export type EventRowsWrite<V> = (
  at: Date,
) => Promise<{ events: WrittenEvent[]; approvers: string[]; value: V }>;

/** The SELECT column of the session's member approvers as of this statement (`AS approvers`). */
export function approversColumn(sessionIdSql: string): string {
  return `(SELECT ${memberApproversSql("s")} FROM sessions s WHERE s.id = ${sessionIdSql}) AS approvers`;
}

/** `ev_<tag>`'s row and the session's member approvers, as AppendedEvent (one SELECT list). */
export function appendedEventColumns(sessionIdParam: string, tag = "e"): string {
  return `(SELECT seq FROM ev_${tag}) AS seq, (SELECT cursor FROM ev_${tag}) AS cursor,
          (SELECT tx FROM ev_${tag}) AS tx,
          ${approversColumn(sessionIdParam)}`;
}

export function appendedEvent(row: {
  seq: unknown;
  cursor: unknown;
  tx: unknown;
  approvers: unknown;
}): AppendedEvent {
  return {
    seq: Number(row.seq),
    cursor: cursorOf(String(row.tx), String(row.cursor)),
    approvers: (row.approvers as string[] | null) ?? [],
  };
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

/**
 * The visibility horizon of this database, as one SQL expression (xid8): the oldest transaction of
 * this database still running in the statement's snapshot, else the snapshot's next id. Every row
 * with a smaller `tx` has committed or never will, and no transaction still to commit has a smaller
 * id, so rows below it never gain a neighbour before them. Transactions of other databases on the
 * same server are left out (pg_stat_activity names their database; reading another role's
 * `backend_xid` needs `pg_read_all_stats`, else they count, which only makes pages wait longer). A
 * transaction of this database left open holds every follower's pages back, never makes one skip
 * an event: the host's own end within half a host lease (idle_in_transaction_session_timeout).
 */
export const HORIZON_SQL = `(SELECT coalesce(min(x), pg_snapshot_xmax(pg_current_snapshot()))
     FROM pg_snapshot_xip(pg_current_snapshot()) AS x
    WHERE xid(x) NOT IN (SELECT backend_xid FROM pg_stat_activity
                          WHERE backend_xid IS NOT NULL AND datname IS DISTINCT FROM current_database()))`;

const APPEND = prepared("event-append", `WITH ${appendEventCtes(1)} SELECT ${appendedEventColumns("$1")}`);

/** Where an `events.since` page starts (`"now"`: at the horizon), whose session, and how many. */
interface SinceParams {
  after: EventCursor | 0 | "now";
  sessionId?: string;
  limit: number;
}

/** One event of appendMany's batch. */
interface ManyEvent {
  sessionId: string;
  type: string;
  body: Record<string, unknown>;
}

/**
 * Writes one event in one statement: the session's counter + 1 is its `seq` (never handed out
 * twice, pruned or not); its position is its transaction's. Who may receive it live comes with
 * it, as of this commit: the owner, and the approvers still members of the project (an actor's
 * cached audience may predate a member's removal). Refused (throws) when the session is gone
 * or the write is fenced.
 */
async function appendEvent(
  db: Db,
  sessionId: string,
  type: string,
  body: Record<string, unknown>,
  at: Date,
): Promise<AppendedEvent> {
  // A session that is gone fails the foreign key: the event is refused (thrown), nothing kept.
  const r = await db.query(APPEND(appendEventParams(sessionId, type, body, at)));
  return appendedEvent(r.rows[0]);
}

/**
 * The principal's events after `after`, oldest first: those of sessions the principal owns or
 * approves now, as a member of the project (the same check as session.get), at most
 * `limit` events and `maxBytes` of bodies (the first event always, though storedBody keeps every
 * body far below a page). `next` is the last cursor returned, or
 * `after` for an empty page; `more` says the page was cut.
 */
async function eventsSince(
  db: Db,
  principal: string,
  p: SinceParams,
  maxBytes = EVENT_PAGE_MAX_BYTES,
): Promise<EventPage> {
  if (p.after === "now") {
    // Every transaction below the horizon has ended: what commits from now on lies above it.
    const h = await db.query(`SELECT ${HORIZON_SQL}::text AS h`);
    return { events: [], next: cursorOf(h.rows[0].h, 0), more: false };
  }
  const [afterTx, afterPosition] = positionOf(p.after);
  // Only below the horizon (HORIZON_SQL): no row can still appear before the last one read (a
  // transaction left open holds the page back, never makes it skip; docs/protocol.md "Catching up").
  const r = await db.query(
    `WITH horizon AS (SELECT ${HORIZON_SQL} AS h), page AS (
       SELECT e.tx, e.cursor, e.bytes FROM session_events e JOIN sessions s ON s.id = e.session_id
        WHERE (e.tx, e.cursor) > ($2::text::xid8, $3::bigint)
          AND e.tx < (SELECT h FROM horizon)
          AND ${ownsOrApprovesSql("s", "$1")}
          AND ($4::text IS NULL OR e.session_id = $4)
        ORDER BY e.tx, e.cursor LIMIT $5 + 1
     ), sized AS (
       SELECT cursor, tx, bytes, sum(bytes + $6) OVER (ORDER BY tx, cursor) AS running,
              row_number() OVER (ORDER BY tx, cursor) AS n FROM page
     )
     SELECT e.cursor, z.tx::text AS tx, e.session_id, e.seq, e.type, e.at, e.body, z.n, z.running,
            NULL AS horizon
       FROM sized z JOIN session_events e ON e.cursor = z.cursor
     UNION ALL SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, (SELECT h FROM horizon)::text
      ORDER BY n NULLS LAST`,
    [principal, afterTx, afterPosition, p.sessionId ?? null, p.limit, EVENT_ENVELOPE_BYTES],
  );
  const events: StoredSessionEvent[] = [];
  let next: EventCursor = p.after === 0 ? CURSOR_START : p.after;
  let more = false;
  // The last row is the horizon alone (the statement's snapshot, the one the page was read in).
  const horizon = r.rows.at(-1).horizon as string;
  for (const row of r.rows) {
    if (row.n === null) break;
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
      cursor: cursorOf(row.tx, row.cursor),
    });
    next = cursorOf(row.tx, row.cursor);
  }
  // Read to the end: nothing of the caller's lies between the last event and the horizon, so the
  // next page may start there (a client that read nothing still moves on).
  const atHorizon = cursorOf(horizon, 0);
  if (!more && atHorizon > next) next = atHorizon;
  return { events, next, more };
}

/**
 * Writes many events of many sessions in one statement (what a fence or a takeover ended,
 * fence-announce.ts): each session's counter row changes once, by its number of events, and
 * each event gets the next of them in the order given. Returns, in the order given, each event's
 * numbers and who may receive it as of this commit.
 */
async function appendMany(
  db: Db,
  events: ReadonlyArray<ManyEvent>,
  at: Date,
): Promise<Array<AppendedEvent & { owner: string }>> {
  if (events.length === 0) return [];
  const stored = events.map((e) => storedBody(e.body));
  const r = await db.query(
    `WITH input AS (
       SELECT x.session_id, x.type, x.body, x.bytes, x.ord
         FROM unnest($1::text[], $2::text[], $3::jsonb[], $4::int[]) WITH ORDINALITY AS x(session_id, type, body, bytes, ord)
     ), counts AS (
       SELECT session_id, count(*)::bigint AS n FROM input GROUP BY session_id
     ), seqs AS (
       INSERT INTO session_event_seqs (session_id, last_seq, last_tx)
       SELECT session_id, n, pg_current_xact_id() FROM counts
       ON CONFLICT (session_id) DO UPDATE SET last_seq = session_event_seqs.last_seq + EXCLUDED.last_seq, ${LAST_TX}
       RETURNING session_id, last_seq, last_tx
     ), numbered AS (
       SELECT i.*, q.last_tx, q.last_seq - c.n + row_number() OVER (PARTITION BY i.session_id ORDER BY i.ord) AS seq
         FROM input i JOIN counts c USING (session_id) JOIN seqs q USING (session_id)
     ), evs AS (
       INSERT INTO session_events (session_id, seq, type, body, bytes, at, tx)
       SELECT session_id, seq, type, body, bytes, $5, last_tx FROM numbered
       RETURNING session_id, seq, cursor, tx::text AS tx
     )
     SELECT n.ord, e.seq, e.cursor, e.tx, s.owner, ${memberApproversSql("s")} AS approvers
       FROM evs e JOIN numbered n ON n.session_id = e.session_id AND n.seq = e.seq
       JOIN sessions s ON s.id = e.session_id ORDER BY n.ord`,
    [
      events.map((e) => e.sessionId),
      events.map((e) => e.type),
      stored.map((b) => b.json),
      stored.map((b) => b.bytes),
      at,
    ],
  );
  return r.rows.map((row) => ({ ...appendedEvent(row), owner: row.owner }));
}

/**
 * Who may receive an event of the session now that no row is written for it (a live-only one):
 * the approvers still members of the project, as an append returns them. Empty when gone.
 */
async function approvers(db: Db, sessionId: string): Promise<string[]> {
  const r = await db.query(`SELECT ${memberApproversSql("s")} AS approvers FROM sessions s WHERE s.id = $1`, [
    sessionId,
  ]);
  return (r.rows[0]?.approvers as string[] | undefined) ?? [];
}

export function createEventStore(deps: { db: Db; clock: Clock }) {
  const { db } = deps;
  return {
    append: (sessionId: string, type: string, body: Record<string, unknown>, at: Date) =>
      appendEvent(db, sessionId, type, body, at),
    since: (principal: string, p: SinceParams, maxBytes?: number) => eventsSince(db, principal, p, maxBytes),
    appendMany: (events: ReadonlyArray<ManyEvent>, at: Date) => appendMany(db, events, at),
    approvers: (sessionId: string) => approvers(db, sessionId),
    pruneByAge: (keepMs?: number) => pruneByAge(deps, keepMs),
    pruneByCount: (hostId: string, keep?: number) => pruneByCount(db, hostId, keep),
  };
}

export type EventStore = ReturnType<typeof createEventStore>;
