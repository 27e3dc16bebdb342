// The startup fence (docs/architecture.md "Host start-up"): before the host subscribes to anything,
// one transaction ends what earlier incarnations of this host id left, in this host's own sessions
// only, and makes this one current. Other hosts' sessions are taken over by liveness (takeover.ts).
import { ok, refuse, type Result } from "../../protocol/result.ts";
import type { Logger } from "../../runtime/log.ts";
import type { Clock } from "../clock.ts";
import { ADVISORY_LOCKS } from "./advisory-locks.ts";
import { type Db, type Tx, withRefusableTransaction, withTransaction } from "./db.ts";

/** What a fence ended, so the sessions' people can be told once the bus is up (fence-announce.ts). */
export interface EndedWork {
  approvalsInterrupted: number;
  executionsInterrupted: number;
  turnsAborted: number;
  permissionsDenied: number;
  /** Tool calls started and never recorded, now recorded TOOL_OUTCOME_UNKNOWN. */
  toolOutcomesUnknown: number;
  /** The plan rows the fence changed. */
  fencedProposalIds: string[];
  /** The turns it aborted, with the code they ended with. */
  endedTurns: Array<{ turnId: string; sessionId: string; code: "HOST_RESTARTED" | "HOST_STOPPING" }>;
  /** The permission prompts it denied (PERMISSION_INTERRUPTED). */
  deniedPermissions: Array<{
    requestId: string;
    sessionId: string;
    turnId: string;
    toolCallId: string;
    tool: string;
  }>;
}

export interface FenceReport extends EndedWork {
  incarnation: number;
}

/**
 * Before the fence: a `running` row of this host id may be a live process. Its heartbeat counter is
 * watched for one lease on this host's clock: if it moves, HOST_ID_IN_USE (the caller exits and
 * starts nothing); if not, the earlier process is gone and the fence may run. A `stopped` or `dead`
 * row (or none) needs no wait. A wait that sees the row stop or die ends at once.
 */
export async function awaitHostIdFree(deps: {
  db: Db;
  clock: Clock;
  hostId: string;
  leaseMs: number;
  pollMs: number;
  log: Logger;
}): Promise<Result<HostIdSeen>> {
  const { db, clock, hostId, leaseMs, log } = deps;
  const read = async () => {
    const r = await db.query("SELECT heartbeat, state, incarnation FROM hosts WHERE id = $1", [hostId]);
    const row = r.rows[0];
    return row
      ? {
          heartbeat: String(row.heartbeat),
          state: row.state as string,
          incarnation: row.incarnation as number,
        }
      : null;
  };
  const first = await read();
  if (first?.state !== "running") return ok({ incarnation: first?.incarnation ?? null });
  log.info("host.id_check", { hostId, leaseMs, heartbeat: first.heartbeat });
  const until = clock.now() + leaseMs;
  const sleep = (ms: number) => new Promise<void>((resolve) => clock.setTimeout(resolve, ms));
  while (clock.now() < until) {
    await sleep(Math.max(1, Math.min(deps.pollMs, until - clock.now())));
    const now = await read();
    if (now?.state !== "running") return ok({ incarnation: now?.incarnation ?? null });
    if (now.heartbeat !== first.heartbeat || now.incarnation !== first.incarnation)
      return refuse(
        "HOST_ID_IN_USE",
        `a host with id ${hostId} is running (its heartbeat moved from ${first.heartbeat} to ${now.heartbeat} within ${leaseMs} ms); give each host its own PI_HOST_ID`,
        { hostId },
      );
  }
  return ok({ incarnation: first.incarnation });
}

/** The host id's row as `awaitHostIdFree` last saw it free: its incarnation, or null for no row. */
export interface HostIdSeen {
  incarnation: number | null;
}

/**
 * Inside the fence, under its lock: another process with this id started since `seen` (the row is
 * `running` under another incarnation, or exists where there was none), so this one must not run.
 */
async function startedMeanwhile(tx: Tx, hostId: string, seen: HostIdSeen): Promise<Result<void>> {
  const r = await tx.query("SELECT incarnation, state FROM hosts WHERE id = $1 FOR UPDATE", [hostId]);
  const row = r.rows[0] as { incarnation: number; state: string } | undefined;
  if (row?.state !== "running" || row.incarnation === seen.incarnation) return ok(undefined);
  return refuse(
    "HOST_ID_IN_USE",
    `a host with id ${hostId} started at the same time (incarnation ${row.incarnation}); give each host its own PI_HOST_ID`,
    { hostId },
  );
}

/**
 * One transaction marks every pending approval and queued/running execution of this host's own
 * sessions interrupted, aborts their running turns, denies their pending permission prompts, with
 * one audit row each, bumps the host's incarnation (and its heartbeat, so an observer that saw the
 * earlier process stall does not take this one over) and claims the sessions that have no lease
 * (legacy). Nothing is replayed; other hosts' sessions are not touched. Each scoped UPDATE is
 * logged with its count, even when 0. The new incarnation is what the host's writer pool then
 * carries (db.ts): from this commit on, an earlier incarnation still running with the same host id
 * can no longer write (migration 9).
 */
export async function runStartupFence(deps: {
  db: Db;
  clock: Clock;
  hostId: string;
  log: Logger;
  info?: Record<string, unknown>;
  /**
   * What awaitHostIdFree saw: a process with this id that started since then (simultaneous starts)
   * makes this fence refuse HOST_ID_IN_USE, changing nothing. Without it, no such check.
   */
  seen?: HostIdSeen;
}): Promise<Result<FenceReport>> {
  const { db, clock, hostId, log } = deps;
  const at = clock.date();
  const fenced = await withRefusableTransaction(db, async (tx) => {
    // Exclusive against every write of this host id in flight (the write fence shares this lock):
    // an earlier incarnation's transaction either commits before the bump or is refused after it.
    await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [ADVISORY_LOCKS.writeFence.key, hostId]);
    if (deps.seen) {
      const free = await startedMeanwhile(tx, hostId, deps.seen);
      if (!free.ok) return free;
    }
    const host = await tx.query(
      `INSERT INTO hosts (id, incarnation, started_at, heartbeat_at, lease_expires_at, info, heartbeat, state) VALUES ($1, 1, $2, $2, $3, $4, 1, 'running')
       ON CONFLICT (id) DO UPDATE SET incarnation = hosts.incarnation + 1, started_at = $2, heartbeat_at = $2, lease_expires_at = $3, info = $4,
         heartbeat = hosts.heartbeat + 1, state = 'running'
       RETURNING incarnation`,
      [hostId, at, new Date(at.getTime() + 30_000), JSON.stringify(deps.info ?? {})],
    );
    const incarnation: number = host.rows[0].incarnation;
    // Sessions without a lease (created before leases) become this host's; leases other hosts hold
    // stay theirs (a dead one's are taken over by liveness). This host's own leases stay as they
    // are: the incarnation in `hosts`, which every write checks (migration 9), already supersedes
    // its earlier self, the lease trigger accepts a lease of an earlier incarnation of the writer
    // (migration 13), and rewriting every lease made each start cost O(sessions)
    // (bench/startup-fence.bench.ts).
    const claimed = await tx.query(
      `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
       SELECT s.id, $1, 1, $2, $3 FROM sessions s
        WHERE NOT EXISTS (SELECT 1 FROM session_leases l WHERE l.session_id = s.id)
       ON CONFLICT (session_id) DO NOTHING`,
      [hostId, at, incarnation],
    );
    if (claimed.rowCount) log.info("host.legacy_leases_claimed", { count: claimed.rowCount });

    return ok({
      incarnation,
      ...(await endWork(tx, { at, hostId, incarnation, kind: "fence", scope: { owner: hostId } })),
    });
  });
  if (!fenced.ok) return fenced;
  const { fencedProposalIds, endedTurns, deniedPermissions, incarnation, ...counts } = fenced.value;
  log.info("host.fence", { incarnation, ...counts, proposals: fencedProposalIds.length });
  return fenced;
}

/** Whose work endWork ends: the sessions leased to a host, or exactly these sessions. */
export type WorkScope = { owner: string } | { sessionIds: string[] };

/**
 * Ends, in the caller's transaction, in the scope's sessions only, every pending approval
 * (interrupted), queued or running execution (interrupted), running turn (aborted with
 * `HOST_RESTARTED` at start or takeover, `HOST_STOPPING` when a host stops) and pending permission
 * prompt (denied), with one audit row each (`<kind>.<what>`, details carrying `extra`). Nothing is
 * replayed.
 */
export async function endWork(
  tx: Tx,
  p: {
    at: Date;
    hostId: string;
    incarnation: number;
    kind: "fence" | "stop" | "takeover";
    scope: WorkScope;
    extra?: Record<string, unknown>;
  },
): Promise<EndedWork> {
  const { at, hostId, incarnation, kind } = p;
  const turnCode = kind === "stop" ? "HOST_STOPPING" : "HOST_RESTARTED";
  // $4 is the scope (the owner's leases, or the session ids), $5 the audit details' extra keys.
  const scope =
    "owner" in p.scope
      ? "session_id IN (SELECT l.session_id FROM session_leases l WHERE l.host_id = $4)"
      : "session_id = ANY($4::text[])";
  const scopeParam = "owner" in p.scope ? p.scope.owner : p.scope.sessionIds;
  const extra = JSON.stringify(p.extra ?? {});
  // Each change and its audit rows in one statement (a CTE): one round trip per kind of row,
  // not one per row, so a fence over thousands of rows stays a few statements long.
  const principal = `host:${hostId}`;
  const fenceRows = (update: string, action: string, code: string, key: string, turn: string) =>
    tx.query(
      `WITH u AS (${update}),
            a AS (INSERT INTO audit_log (at, principal, session_id, turn_id, action, code, details)
                  SELECT $1, $2, u.session_id, ${turn}, '${kind}.${action}', '${code}',
                         jsonb_build_object('${key}', u.id, 'incarnation', $3::int) || $5::jsonb FROM u)
       SELECT * FROM u`,
      [at, principal, incarnation, scopeParam, extra],
    );
  const approvals = await fenceRows(
    `UPDATE plan_approvals SET status = 'interrupted', error_code = 'PLAN_APPROVAL_INTERRUPTED', resolved_at = $1, version = version + 1
     WHERE status = 'pending' AND ${scope} RETURNING id, session_id, turn_id`,
    "approval",
    "PLAN_APPROVAL_INTERRUPTED",
    "proposalId",
    "u.turn_id",
  );
  const executions = await fenceRows(
    `UPDATE plan_approvals SET execution_state = 'interrupted', error_code = 'PLAN_EXECUTION_INTERRUPTED', version = version + 1
     WHERE execution_state IN ('queued', 'running') AND ${scope} RETURNING id, session_id, execution_turn_id`,
    "execution",
    "PLAN_EXECUTION_INTERRUPTED",
    "proposalId",
    "u.execution_turn_id",
  );
  const turns = await fenceRows(
    `UPDATE turns SET status = 'aborted', error_code = '${turnCode}', ended_at = $1 WHERE status = 'running' AND ${scope}
     RETURNING id, session_id`,
    "turn",
    turnCode,
    "turn",
    "u.id",
  );
  // Tool calls started and never recorded (the host died while one ran): their result is recorded
  // as TOOL_OUTCOME_UNKNOWN, with its transcript entry and audit row, and they never run again.
  const unknown = await tx.query(
    `WITH s AS (
       SELECT st.turn_id, st.tool_call_id, st.session_id, st.tool,
              jsonb_build_object(
                'content', jsonb_build_array(jsonb_build_object('type', 'text', 'text',
                  st.tool || ' was running when the host ' || $6 || '; whether it finished is unknown, and it is not run again')),
                'isError', true, 'code', 'TOOL_OUTCOME_UNKNOWN') AS result
         FROM tool_call_starts st
        WHERE st.${scope}
          AND NOT EXISTS (SELECT 1 FROM tool_calls tc WHERE tc.turn_id = st.turn_id AND tc.tool_call_id = st.tool_call_id)
     ), tc AS (
       INSERT INTO tool_calls (turn_id, tool_call_id, session_id, tool, decision, code, result, created_at)
       SELECT turn_id, tool_call_id, session_id, tool, 'allow', 'TOOL_OUTCOME_UNKNOWN', result, $1 FROM s
       RETURNING turn_id, tool_call_id, session_id, tool
     ), te AS (
       INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at)
       SELECT session_id, turn_id, 'toolResult',
              jsonb_build_object('role', 'toolResult', 'toolCallId', tool_call_id, 'toolName', tool,
                'content', result->'content', 'details', '{}'::jsonb, 'isError', true,
                'timestamp', (extract(epoch FROM $1::timestamptz) * 1000)::bigint), $1
         FROM s
     ), a AS (
       INSERT INTO audit_log (at, principal, session_id, turn_id, tool_call_id, action, code, details)
       SELECT $1, $2, session_id, turn_id, tool_call_id, '${kind}.tool_call', 'TOOL_OUTCOME_UNKNOWN',
              jsonb_build_object('tool', tool, 'incarnation', $3::int) || $5::jsonb FROM tc
     )
     SELECT count(*)::int AS n FROM tc`,
    [
      at,
      principal,
      incarnation,
      scopeParam,
      extra,
      kind === "stop" ? "stopped" : kind === "fence" ? "restarted" : "was lost",
    ],
  );
  const permissions = await fenceRows(
    `UPDATE permission_requests SET status = 'denied', code = 'PERMISSION_INTERRUPTED', resolved_at = $1
     WHERE status = 'pending' AND ${scope} RETURNING id, session_id, turn_id, tool_call_id, tool`,
    "permission",
    "PERMISSION_INTERRUPTED",
    "requestId",
    "u.turn_id",
  );
  return {
    approvalsInterrupted: approvals.rowCount ?? 0,
    executionsInterrupted: executions.rowCount ?? 0,
    turnsAborted: turns.rowCount ?? 0,
    permissionsDenied: permissions.rowCount ?? 0,
    toolOutcomesUnknown: unknown.rows[0]?.n ?? 0,
    fencedProposalIds: [...new Set([...approvals.rows, ...executions.rows].map((r: { id: string }) => r.id))],
    endedTurns: turns.rows.map((r: { id: string; session_id: string }) => ({
      turnId: r.id,
      sessionId: r.session_id,
      code: turnCode,
    })),
    deniedPermissions: permissions.rows.map(
      (r: { id: string; session_id: string; turn_id: string; tool_call_id: string; tool: string }) => ({
        requestId: r.id,
        sessionId: r.session_id,
        turnId: r.turn_id,
        toolCallId: r.tool_call_id,
        tool: r.tool,
      }),
    ),
  };
}

/**
 * A host stopped by a signal ends its work at once, as the fence would at its next start but with
 * `HOST_STOPPING` on the turns, through its own (write-fenced) pool, so people are told now. In the
 * same transaction its host row becomes `stopped` (only while this incarnation is current), so
 * another host's liveness observer takes its sessions over at once, without waiting for the lease.
 */
export async function runStopFence(deps: {
  db: Db;
  clock: Clock;
  hostId: string;
  incarnation: number;
  log: Logger;
}): Promise<EndedWork> {
  const at = deps.clock.date();
  let stopped = 0;
  const ended = await withTransaction(deps.db, async (tx) => {
    const work = await endWork(tx, {
      at,
      hostId: deps.hostId,
      incarnation: deps.incarnation,
      kind: "stop",
      scope: { owner: deps.hostId },
    });
    const row = await tx.query("UPDATE hosts SET state = 'stopped' WHERE id = $1 AND incarnation = $2", [
      deps.hostId,
      deps.incarnation,
    ]);
    stopped = row.rowCount ?? 0;
    return work;
  });
  const { fencedProposalIds, endedTurns, deniedPermissions, ...counts } = ended;
  deps.log.info("host.stop_fence", {
    ...counts,
    proposals: fencedProposalIds.length,
    hostStopped: stopped === 1,
  });
  return ended;
}

/**
 * The HTTP listeners (`info.http`, written at each host's fence) of the hosts other than `selfId`,
 * in any state (one stopped may start again): a BrowserPreview page may not reach them.
 */
export async function otherHostListeners(db: Db, selfId: string): Promise<string[]> {
  const r = await db.query("SELECT info->>'http' AS http FROM hosts WHERE id <> $1 AND info ? 'http'", [
    selfId,
  ]);
  return r.rows.map((row: { http: string | null }) => row.http).filter((h): h is string => !!h);
}

/** How many session leases this host holds (the leases-owned gauge, read at each scrape). */
export async function countLeasesOwned(db: Db, hostId: string): Promise<number> {
  const r = await db.query("SELECT count(*)::int AS n FROM session_leases WHERE host_id = $1", [hostId]);
  return r.rows[0]?.n ?? 0;
}
