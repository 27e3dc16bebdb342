// Benchmark (not a test): the startup fence (docs/architecture.md "Host start-up", startup-fence.ts)
// on a database of SESSIONS sessions (default 100,000), once with nothing to fence and once with
// INFLIGHT sessions holding work (default 10,000: a running turn each; a third also a pending
// approval, a third a running execution, a third a pending permission prompt) and every session
// leased to the host, next to the raw floor measured in the same run: a bare NATS request/reply plus
// a bare primary-key SELECT. "Fenced and serving" is what a host does before it answers its first
// request: the fence's transaction, then every end announced (stored and published on NATS by the
// real event publisher, fence-announce.ts). Between runs the fenced rows are put back (not timed).
// Run: `npm run bench:fence` (needs Postgres and NATS like the tests); BENCH_SESSIONS,
// BENCH_INFLIGHT and BENCH_RUNS change the sizes.
import type { NatsConnection } from "@nats-io/nats-core";
import { createClock } from "../services/host/clock.ts";
import { announceEndedWork } from "../services/host/sessions/events/fence-announce.ts";
import { createEventPublisher } from "../services/host/sessions/events/event-publisher.ts";
import { createEventStore } from "../services/host/store/event-store.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import { createPlanStore } from "../services/host/store/plan-store.ts";
import { createSessionStore } from "../services/host/store/session-store.ts";
import { runStartupFence } from "../services/host/store/startup-fence.ts";
import { unwrap } from "../services/protocol/result.ts";
import type { Logger } from "../services/runtime/log.ts";
import { connectNats } from "../tests/support/test-nats.ts";
import { createTestDatabase, type TestDatabase } from "../tests/support/test-db.ts";
import { stats, time } from "./bench-support.ts";

const SESSIONS = Number(process.env.BENCH_SESSIONS || 100_000);
const INFLIGHT = Number(process.env.BENCH_INFLIGHT || 10_000);
const RUNS = Number(process.env.BENCH_RUNS || 5);
const FLOOR_N = 1000;
const HOST = "bench-host";
const silent = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger;

type Query = (sql: string, params?: unknown[]) => Promise<unknown>;

/**
 * SESSIONS sessions leased to this host, each with one finished turn (history the fence must not
 * touch) and, for INFLIGHT of them, a running one; a third of those also wait for an approval, a
 * third run an execution, a third wait for a permission prompt.
 */
async function seed(q: Query): Promise<void> {
  const at = new Date();
  await q(
    "INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ('prj_b', 'b', '/tmp', 'alice', $1)",
    [at],
  );
  await q(
    `INSERT INTO sessions (id, project_id, owner, mode, provider, model, created_at, updated_at)
     SELECT 'ses_' || g, 'prj_b', 'alice', 'plan', 'scripted', 'demo', $2, $2 FROM generate_series(1, $1::int) g`,
    [SESSIONS, at],
  );
  // Every session's lease belongs to this host (the fence moves them all to the new epoch).
  await q(
    "INSERT INTO hosts (id, incarnation, started_at, heartbeat_at, lease_expires_at) VALUES ($1, 1, $2, $2, $2)",
    [HOST, at],
  );
  await q(
    "INSERT INTO session_leases (session_id, host_id, epoch, acquired_at) SELECT id, $1, 1, $2 FROM sessions",
    [HOST, at],
  );
  await q(
    `INSERT INTO turns (id, session_id, kind, status, created_at, ended_at)
     SELECT 'done_' || g, 'ses_' || g, 'prompt', 'completed', $2, $2 FROM generate_series(1, $1::int) g`,
    [SESSIONS, at],
  );
  await q(
    `INSERT INTO turns (id, session_id, kind, status, created_at)
     SELECT 'run_' || g, 'ses_' || g, 'prompt', 'running', $2 FROM generate_series(1, $1::int) g`,
    [INFLIGHT, at],
  );
  const approval = (status: string, exec: boolean) => `
    INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
      artifact_path, artifact_sha256, artifact_size, status, action, target_permission_mode, created_at, deadline,
      execution_id, execution_state, execution_turn_id)
    SELECT 'pa_' || g, 'req_' || g, 'ses_' || g, 'done_' || g, 'call', 't', 'q', '# plan',
      '.pi/plan/p' || g || '.md', 'sha', 6, '${status}', ${exec ? "'approve', 'auto'" : "NULL, NULL"}, $2, $3,
      ${exec ? "'exe_' || g, 'running', 'run_' || g" : "NULL, NULL, NULL"}
    FROM generate_series($1::int, $4::int) g`;
  const third = Math.floor(INFLIGHT / 3);
  const later = new Date(at.getTime() + 3600_000);
  await q(approval("pending", false), [1, at, later, third]);
  await q(approval("approved", true), [third + 1, at, later, 2 * third]);
  await q(
    `INSERT INTO permission_requests (id, session_id, turn_id, tool_call_id, tool, status, created_at, deadline, risk)
     SELECT 'perm_' || g, 'ses_' || g, 'run_' || g, 'call', 'Bash', 'pending', $2, $3, 'high'
     FROM generate_series($1::int, $4::int) g`,
    [2 * third + 1, at, later, INFLIGHT],
  );
  await q("ANALYZE");
}

/** The seeded work in flight again, as before the fence ended it. */
async function reset(q: Query): Promise<void> {
  await q("UPDATE turns SET status = 'running', error_code = NULL, ended_at = NULL WHERE id LIKE 'run\\_%'");
  await q(
    "UPDATE plan_approvals SET status = 'pending', error_code = NULL, resolved_at = NULL WHERE execution_id IS NULL",
  );
  await q(
    "UPDATE plan_approvals SET execution_state = 'running', error_code = NULL WHERE execution_id IS NOT NULL",
  );
  await q("UPDATE permission_requests SET status = 'pending', code = NULL, resolved_at = NULL");
}

/** The fence as a starting host runs it: the fence transaction, then every end announced and published. */
function fencer(db: TestDatabase["pool"], nc: NatsConnection) {
  const clock = createClock();
  const events = createEventPublisher({
    nc,
    prefix: "bench.fence",
    clock,
    store: createEventStore({ db, clock }),
    log: silent,
    hostId: HOST,
  });
  const plans = createPlanStore({
    db,
    clock,
    sessions: createSessionStore({ db, clock }),
    approvalTimeoutMs: 3600_000,
  });
  return async () => {
    const t = performance.now();
    const r = unwrap(await runStartupFence({ db, clock, hostId: HOST, log: silent }));
    const fenced = performance.now() - t;
    await announceEndedWork({ plans, events, log: silent }, r);
    await nc.flush();
    return { ms: performance.now() - t, fenced, r };
  };
}

/** Floor: bare NATS round trip + bare PK SELECT, same run. */
async function floorOf(nc: NatsConnection, q: Query) {
  const echo = nc.subscribe("bench.fence.echo", {
    callback: (_e, m) => {
      m.respond(m.data);
    },
  });
  const body = new TextEncoder().encode("{}");
  await time(100, () => nc.request("bench.fence.echo", body));
  const nats = stats(await time(FLOOR_N, () => nc.request("bench.fence.echo", body)));
  const pk = stats(await time(FLOOR_N, () => q("SELECT mode FROM sessions WHERE id = $1", ["ses_1"])));
  echo.unsubscribe();
  return { nats, pk, floor: nats.p50 + pk.p50 };
}

type FenceRun = Awaited<ReturnType<ReturnType<typeof fencer>>>;

function print(
  f: Awaited<ReturnType<typeof floorOf>>,
  runs: { empty: number[]; loaded: number[]; fenceOnly: number[] },
  last: FenceRun["r"] | null,
  published: number,
) {
  const fenced = last
    ? last.approvalsInterrupted + last.executionsInterrupted + last.turnsAborted + last.permissionsDenied
    : 0;
  const line = (name: string, s: { p50: number; max: number }) =>
    `${name.padEnd(44)} p50 ${s.p50.toFixed(2).padStart(8)} ms  max ${s.max.toFixed(2).padStart(8)} ms  ratio p50 ${(s.p50 / f.floor).toFixed(1).padStart(6)}x`;
  console.log(`startup fence, ${SESSIONS} sessions, ${RUNS} runs each`);
  console.log(
    `floor: NATS request/reply p50 ${f.nats.p50.toFixed(3)} ms + PK SELECT p50 ${f.pk.p50.toFixed(3)} ms = ${f.floor.toFixed(3)} ms`,
  );
  console.log(line("nothing to fence: fenced and serving", stats(runs.empty)));
  console.log(line(`${INFLIGHT} in flight: the fence transaction`, stats(runs.fenceOnly)));
  console.log(line(`${INFLIGHT} in flight: fenced and serving`, stats(runs.loaded)));
  console.log(`${fenced} rows fenced per run; ${Math.round(published / RUNS)} events published per run`);
  if (last)
    console.log(
      `last loaded run: ${JSON.stringify({
        ...last,
        fencedProposalIds: last.fencedProposalIds.length,
        endedTurns: last.endedTurns.length,
        deniedPermissions: last.deniedPermissions.length,
      })}`,
    );
}

async function main() {
  const tdb = await createTestDatabase("bench_fence");
  const nc = await connectNats();
  try {
    await migrateUp({ databaseUrl: tdb.url });
    const q: Query = (sql, params = []) => tdb.pool.query(sql, params);
    await seed(q);
    const fence = fencer(tdb.pool, nc);
    // Counts what reached the bus: every announced end is published before the host serves.
    let published = 0;
    const seen = nc.subscribe("bench.fence.evt.>", {
      callback: () => {
        published++;
      },
    });
    const floor = await floorOf(nc, q);

    await fence(); // warm-up; fences the seeded work once
    const runs = { empty: [] as number[], loaded: [] as number[], fenceOnly: [] as number[] };
    for (let i = 0; i < RUNS; i++) runs.empty.push((await fence()).ms);
    let last: FenceRun["r"] | null = null;
    published = 0;
    for (let i = 0; i < RUNS; i++) {
      await reset(q);
      const { ms, fenced, r } = await fence();
      runs.loaded.push(ms);
      runs.fenceOnly.push(fenced);
      last = r;
    }
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    seen.unsubscribe();
    print(floor, runs, last, published);
  } finally {
    await nc.close();
    await tdb.drop();
  }
}

await main();
process.exit(0);
