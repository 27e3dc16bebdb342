// The startup fence (docs/architecture.md "Host start-up", single host): before the host subscribes to
// anything, one transaction ends what earlier incarnations left and makes this one current.
import type { Logger } from "../../protocol/log.ts";
import type { Clock } from "../clock.ts";
import { type Db, WRITE_FENCE_LOCK_CLASS, withTransaction } from "./db.ts";

export interface FenceReport {
  incarnation: number;
  approvalsInterrupted: number;
  executionsInterrupted: number;
  turnsAborted: number;
  permissionsDenied: number;
  /** The plan rows the fence changed, so their sessions can be told once the bus is up. */
  fencedProposalIds: string[];
}

/**
 * One transaction marks every earlier pending approval and queued/running execution interrupted,
 * aborts every running turn, denies pending permission prompts, bumps the host's incarnation and
 * takes over leases another host id held, with one audit row each. Nothing is replayed. Each scoped
 * UPDATE is logged with its count, even when 0. The new incarnation is what the host's writer pool
 * then carries (db.ts): from this commit on, an earlier incarnation still running with the same host
 * id can no longer write (migration 9).
 */
export async function runStartupFence(deps: {
  db: Db;
  clock: Clock;
  hostId: string;
  log: Logger;
  info?: Record<string, unknown>;
}): Promise<FenceReport> {
  const { db, clock, hostId, log } = deps;
  const at = clock.date();
  const report = await withTransaction(db, async (tx) => {
    // Exclusive against every write of this host id in flight (the write fence shares this lock):
    // an earlier incarnation's transaction either commits before the bump or is refused after it.
    await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [WRITE_FENCE_LOCK_CLASS, hostId]);
    const host = await tx.query(
      `INSERT INTO hosts (id, incarnation, started_at, heartbeat_at, lease_expires_at, info) VALUES ($1, 1, $2, $2, $3, $4)
       ON CONFLICT (id) DO UPDATE SET incarnation = hosts.incarnation + 1, started_at = $2, heartbeat_at = $2, lease_expires_at = $3, info = $4
       RETURNING incarnation`,
      [hostId, at, new Date(at.getTime() + 30_000), JSON.stringify(deps.info ?? {})],
    );
    const incarnation: number = host.rows[0].incarnation;
    // With one host every earlier row is fenced. Leases another host id held are taken over with
    // this incarnation as their epoch; this host's own leases stay as they are: the incarnation in
    // `hosts`, which every write checks (migration 9), already supersedes its earlier self, and
    // rewriting every lease made each start cost O(sessions) (bench/startup-fence.bench.ts).
    await tx.query(
      "UPDATE session_leases SET host_id = $1, epoch = $2, acquired_at = $3 WHERE host_id <> $1",
      [hostId, incarnation, at],
    );

    // Each change and its audit rows in one statement (a CTE): one round trip per kind of row,
    // not one per row, so a fence over thousands of rows stays a few statements long.
    const principal = `host:${hostId}`;
    const fenceRows = (update: string, action: string, code: string, key: string, turn: string) =>
      tx.query(
        `WITH u AS (${update}),
              a AS (INSERT INTO audit_log (at, principal, session_id, turn_id, action, code, details)
                    SELECT $1, $2, u.session_id, ${turn}, '${action}', '${code}',
                           jsonb_build_object('${key}', u.id, 'incarnation', $3::int) FROM u)
         SELECT * FROM u`,
        [at, principal, incarnation],
      );
    const approvals = await fenceRows(
      `UPDATE plan_approvals SET status = 'interrupted', error_code = 'PLAN_APPROVAL_INTERRUPTED', resolved_at = $1, version = version + 1
       WHERE status = 'pending' RETURNING id, session_id, turn_id`,
      "fence.approval",
      "PLAN_APPROVAL_INTERRUPTED",
      "proposalId",
      "u.turn_id",
    );
    const executions = await fenceRows(
      `UPDATE plan_approvals SET execution_state = 'interrupted', error_code = 'PLAN_EXECUTION_INTERRUPTED', version = version + 1
       WHERE execution_state IN ('queued', 'running') RETURNING id, session_id, execution_turn_id`,
      "fence.execution",
      "PLAN_EXECUTION_INTERRUPTED",
      "proposalId",
      "u.execution_turn_id",
    );
    const turns = await fenceRows(
      `UPDATE turns SET status = 'aborted', error_code = 'HOST_RESTARTED', ended_at = $1 WHERE status = 'running'
       RETURNING id, session_id`,
      "fence.turn",
      "HOST_RESTARTED",
      "turn",
      "u.id",
    );
    const permissions = await fenceRows(
      `UPDATE permission_requests SET status = 'denied', code = 'PERMISSION_INTERRUPTED', resolved_at = $1
       WHERE status = 'pending' RETURNING id, session_id, turn_id`,
      "fence.permission",
      "PERMISSION_INTERRUPTED",
      "requestId",
      "u.turn_id",
    );
    return {
      incarnation,
      approvalsInterrupted: approvals.rowCount ?? 0,
      executionsInterrupted: executions.rowCount ?? 0,
      turnsAborted: turns.rowCount ?? 0,
      permissionsDenied: permissions.rowCount ?? 0,
      fencedProposalIds: [
        ...new Set([...approvals.rows, ...executions.rows].map((r: { id: string }) => r.id)),
      ],
    };
  });
  const { fencedProposalIds, ...counts } = report;
  log.info("host.fence", { ...counts, proposals: fencedProposalIds.length });
  return report;
}
