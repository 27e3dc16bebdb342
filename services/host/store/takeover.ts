// Taking a dead host's sessions over (docs/architecture.md "Several hosts"): one transaction in the
// taker's own (write-fenced) pool that fences the dead host and makes its sessions the taker's.
// Which hosts are dead is host-liveness.ts's; announcing what ended is fence-announce.ts's.
import type { Logger } from "../../runtime/log.ts";
import type { Clock } from "../clock.ts";
import { ADVISORY_LOCKS } from "./advisory-locks.ts";
import { type Db, withTransaction } from "./db.ts";
import { type EndedWork, endWork } from "./startup-fence.ts";

export interface TakeoverReport extends EndedWork {
  deadHostId: string;
  /** The sessions whose leases moved to the taker. */
  sessionIds: string[];
}

/**
 * Takes over `deadHostId` if it is still as the observer saw it (its heartbeat counter still
 * `observedHeartbeat`, its state not `dead`): bumps its incarnation (so the write fence refuses
 * whatever it still tries) and marks it `dead`, moves its leases to this host (`epoch + 1`, this
 * incarnation), and ends the work of exactly those sessions as the startup fence would, one audit row
 * each, all in one transaction. Of any number of hosts racing for the same dead host, one wins; the
 * others (and a host whose counter moved) get null and change nothing. The dead host's advisory
 * write lock is taken first, as the startup fence takes it, so its writes in flight finish or are
 * refused; `lockTimeoutMs` bounds that wait (a host stuck inside a transaction), after which the
 * takeover fails and is tried again at the next tick.
 */
export async function takeOverHost(deps: {
  db: Db;
  clock: Clock;
  hostId: string;
  incarnation: number;
  deadHostId: string;
  observedHeartbeat: number;
  lockTimeoutMs?: number;
  log: Logger;
}): Promise<TakeoverReport | null> {
  const { db, clock, hostId, incarnation, deadHostId, log } = deps;
  if (deadHostId === hostId) return null;
  const at = clock.date();
  const report = await withTransaction(db, async (tx) => {
    await tx.query(`SET LOCAL lock_timeout = ${Math.max(1, Math.floor(deps.lockTimeoutMs ?? 10_000))}`);
    await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
      ADVISORY_LOCKS.writeFence.key,
      deadHostId,
    ]);
    const row = await tx.query("SELECT heartbeat, state FROM hosts WHERE id = $1 FOR UPDATE", [deadHostId]);
    const dead = row.rows[0];
    if (!dead || dead.state === "dead" || Number(dead.heartbeat) !== deps.observedHeartbeat) return null;
    await tx.query("UPDATE hosts SET incarnation = incarnation + 1, state = 'dead' WHERE id = $1", [
      deadHostId,
    ]);
    // The leases first: the lease trigger then lets this host end the sessions' work (migration 13).
    const leases = await tx.query(
      `UPDATE session_leases SET host_id = $1, incarnation = $2, epoch = epoch + 1, acquired_at = $3
        WHERE host_id = $4 RETURNING session_id`,
      [hostId, incarnation, at, deadHostId],
    );
    const sessionIds: string[] = leases.rows.map((r: { session_id: string }) => r.session_id);
    const ended = await endWork(tx, {
      at,
      hostId,
      incarnation,
      kind: "takeover",
      scope: { sessionIds },
      extra: { fromHost: deadHostId },
    });
    return { deadHostId, sessionIds, ...ended };
  });
  if (report) {
    const { fencedProposalIds, endedTurns, deniedPermissions, sessionIds, ...counts } = report;
    log.info("host.takeover", {
      ...counts,
      sessions: sessionIds.length,
      proposals: fencedProposalIds.length,
    });
  }
  return report;
}
