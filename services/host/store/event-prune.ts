// Retention of session events (event-store.ts writes and reads them): by age on the host clock, and
// by count per session, off the hot path on the pruner's timer (docs/architecture.md "Events").
import type { Clock } from "../clock.ts";
import type { Db } from "./db.ts";

/** Events kept per session: older sequence numbers are pruned as new ones are written. */
export const EVENT_KEEP_PER_SESSION = 5_000;
/** Events older than this (host clock) are pruned. */
export const EVENT_KEEP_MS = 7 * 24 * 3600_000;

/** Removes the events older than EVENT_KEEP_MS by the host clock; returns how many. */
export async function pruneByAge(
  { db, clock }: { db: Db; clock: Clock },
  keepMs = EVENT_KEEP_MS,
): Promise<number> {
  const r = await db.query("DELETE FROM session_events WHERE at < $1", [new Date(clock.now() - keepMs)]);
  return r.rowCount ?? 0;
}

/**
 * Keeps the newest EVENT_KEEP_PER_SESSION events of each session this host owns (or that no host
 * has a lease on): off the hot path, on the pruner's timer (event-publisher.ts). Returns how many.
 */
export async function pruneByCount(db: Db, hostId: string, keep = EVENT_KEEP_PER_SESSION): Promise<number> {
  const r = await db.query(
    `DELETE FROM session_events e USING session_event_seqs q
      WHERE e.session_id = q.session_id AND e.seq <= q.last_seq - $2 AND q.last_seq > $2
        AND NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = q.session_id AND l.host_id <> $1)`,
    [hostId, keep],
  );
  return r.rowCount ?? 0;
}
