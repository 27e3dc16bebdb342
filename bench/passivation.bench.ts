// Benchmark (not a test): what a session costs the host while passivated (rows only) and while
// active (a loaded, idle actor), and how long activation takes (a request on a passivated session
// until its actor has read its rows), next to a bare XState actor of the same machine with
// trivially provided actors. In process, on the real supervisor and a real Postgres database
// (10,000 session rows inserted in bulk); no NATS (offers and events go nowhere; idle sessions
// publish none). Run: `npm run bench:passivation` (needs Postgres like the tests; BENCH_N sets the
// session count, default 10000).
import os from "node:os";
import { createActor, fromPromise } from "xstate";
import {
  type SessionFacts,
  type StepInput,
  sessionMachine,
  type StepOutput,
} from "../machines/session.machine.ts";
import type { Logger } from "../services/runtime/log.ts";
import { createClock } from "../services/host/clock.ts";
import { createDb, type Db } from "../services/host/store/db.ts";
import type { EventPublisher } from "../services/host/sessions/events/event-publisher.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import { createPlanStore } from "../services/host/store/plan-store.ts";
import { createSessionSupervisor } from "../services/host/sessions/actors/session-supervisor.ts";
import { createSessionStore } from "../services/host/store/session-store.ts";
import { createTurnDispatcher } from "../services/host/sessions/turns/turn-dispatcher.ts";
import { createTestDatabase, type TestDatabase } from "../tests/support/test-db.ts";
import { stats } from "./bench-support.ts";

const N = Number(process.env.BENCH_N || 10_000);
const HOST_ID = "host-bench";

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) {
  console.error("run with node --expose-gc (npm run bench:passivation does)");
  process.exit(2);
}

/** Heap in use after full collections. */
async function heap(): Promise<number> {
  for (let i = 0; i < 3; i++) {
    gc!();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

const silent: Logger = { info() {}, warn() {}, error: (e, f) => console.error(e, f) };

/** (i) The same machine with trivially provided actors: what XState alone costs per session. */
async function bareActors() {
  const idleFacts: SessionFacts = {
    mode: "agent",
    activeTurnId: null,
    activeTurnKind: null,
    pendingProposalId: null,
    pendingDeadlineMs: null,
    queuedExecutionTurnId: null,
  };
  const trivial = fromPromise<StepOutput, StepInput>(async () => ({}));
  const bare = sessionMachine.provide({
    actors: {
      loadSession: fromPromise<SessionFacts, { sessionId: string }>(async () => idleFacts),
      startTurn: trivial,
      configure: trivial,
      claimTurn: trivial,
      enterPlan: trivial,
      submitPlan: trivial,
      resolvePlan: trivial,
      endTurn: trivial,
      abortWork: trivial,
      expirePlan: trivial,
    },
  });
  const before = await heap();
  const actors: Array<ReturnType<typeof createActor<typeof bare>>> = [];
  const times: number[] = [];
  for (let i = 0; i < N; i++) {
    const t = performance.now();
    const a = createActor(bare, { input: { sessionId: `ses_${i}` } });
    a.subscribe({ error: () => {} });
    a.start();
    await new Promise<void>((resolve) => {
      if (a.getSnapshot().value === "idle") return resolve();
      const sub = a.subscribe((s) => {
        if (s.value === "idle") {
          sub.unsubscribe();
          resolve();
        }
      });
    });
    times.push(performance.now() - t);
    actors.push(a);
  }
  const after = await heap();
  for (const a of actors) a.stop();
  return { perActor: (after - before) / N, start: stats(times) };
}

/** N sessions of one project, all leased to this host, inserted in bulk. */
async function seedSessions(pool: TestDatabase["pool"]): Promise<string[]> {
  const at = new Date();
  await pool.query(
    "INSERT INTO hosts (id, incarnation, started_at, heartbeat_at, lease_expires_at) VALUES ($1, 1, $2, $2, $2)",
    [HOST_ID, at],
  );
  await pool.query(
    "INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ('prj_bench', 'bench', '/tmp', 'alice', $1)",
    [at],
  );
  await pool.query(
    `INSERT INTO sessions (id, project_id, title, owner, mode, permission_mode, provider, model, model_config, version, created_at, updated_at)
     SELECT 'ses_' || g, 'prj_bench', '', 'alice', 'agent', 'inherit', 'scripted', 'demo',
            '{"provider":"scripted","model":"demo"}'::jsonb, 0, $2, $2
     FROM generate_series(1, $1::int) g`,
    [N, at],
  );
  await pool.query(
    `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at)
     SELECT id, $1, 1, $2 FROM sessions`,
    [HOST_ID, at],
  );
  await pool.query("ANALYZE");
  return Array.from({ length: N }, (_, i) => `ses_${i + 1}`);
}

const PASSIVATE_AFTER_MS = 60_000;

/** The host's supervisor over its real stores; offers and events go nowhere. */
function buildSupervisor(db: Db) {
  const clock = createClock();
  const sessions = createSessionStore({ db, clock });
  const plans = createPlanStore({ db, clock, sessions, approvalTimeoutMs: 30 * 60_000 });
  const nc = { publish() {} } as unknown as Parameters<typeof createTurnDispatcher>[0]["nc"];
  const dispatcher = createTurnDispatcher({
    nc,
    prefix: "bench",
    hostId: "bench",
    clock,
    leaseMs: 15_000,
    offerIntervalMs: 60_000,
    log: silent,
    onLeaseLost: () => {},
  });
  const events = { publish() {} } as unknown as EventPublisher;
  const supervisor = createSessionSupervisor({
    db,
    clock,
    sessions,
    plans,
    dispatcher,
    events,
    log: silent,
    leaseMs: 15_000,
    heartbeatMs: 3_000,
    passivateAfterMs: PASSIVATE_AFTER_MS,
  });
  return { clock, dispatcher, supervisor };
}

/** Floor: the primary-key SELECT an activation does (it does two reads). */
async function pkSelectTimes(db: Db, ids: string[]): Promise<number[]> {
  for (let i = 0; i < 500; i++) await db.query("SELECT mode FROM sessions WHERE id = $1", [ids[i]]);
  const times: number[] = [];
  for (let i = 0; i < 2000; i++) {
    const t = performance.now();
    await db.query("SELECT mode FROM sessions WHERE id = $1", [ids[(i * 7) % N]]);
    times.push(performance.now() - t);
  }
  return times;
}

type Supervision = ReturnType<typeof buildSupervisor>;

/** Activation of every session, one request at a time (until the actor has read its rows). */
async function activateInTurn({ supervisor }: Supervision, ids: string[]) {
  const cpu0 = process.cpuUsage();
  const times: number[] = [];
  for (const id of ids) {
    const t = performance.now();
    await supervisor.activate(id);
    times.push(performance.now() - t);
  }
  const cpu = process.cpuUsage(cpu0);
  if (supervisor.size() !== N) throw new Error(`expected ${N} live actors, got ${supervisor.size()}`);
  return { times, cpuPerActivationMs: (cpu.user + cpu.system) / 1000 / N };
}

/** Activation of every session with 32 requests in flight. */
async function activateConcurrently({ supervisor }: Supervision, ids: string[]) {
  const times: number[] = [];
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < N) {
        const id = ids[next++]!;
        const t = performance.now();
        await supervisor.activate(id);
        times.push(performance.now() - t);
      }
    }),
  );
  return { times, rate: N / ((performance.now() - t0) / 1000) };
}

/** (ii) The host's supervisor on real rows. */
async function hostSupervisor() {
  const tdb = await createTestDatabase("bench_passivation");
  try {
    await migrateUp({ databaseUrl: tdb.url });
    const db = createDb(tdb.url);
    const ids = await seedSessions(tdb.pool);
    const supervision = buildSupervisor(db);
    const { clock, dispatcher, supervisor } = supervision;
    const floorTimes = await pkSelectTimes(db, ids);
    // Warm the supervisor's code paths on 200 sessions, then passivate them again.
    for (let i = 0; i < 200; i++) await supervisor.activate(ids[i]!);
    clock.advance(PASSIVATE_AFTER_MS + 1);
    supervisor.passivateIdle();

    // Every session passivated: the host holds rows only.
    const passivated = await heap();
    const sequential = await activateInTurn(supervision, ids);
    const active = await heap();

    // Passivate all: the memory comes back.
    clock.advance(PASSIVATE_AFTER_MS + 1);
    const stoppedCount = supervisor.passivateIdle();
    const after = await heap();
    const concurrent = await activateConcurrently(supervision, ids);

    supervisor.stopAll();
    dispatcher.stop();
    await db.end();
    return {
      floor: stats(floorTimes),
      perActive: (active - passivated) / N,
      perPassivatedAfter: (after - passivated) / N,
      stoppedCount,
      activation: stats(sequential.times),
      cpuPerActivationMs: sequential.cpuPerActivationMs,
      concurrent: stats(concurrent.times),
      concurrentRate: concurrent.rate,
    };
  } finally {
    await tdb.drop();
  }
}

async function main() {
  const bare = await bareActors();
  const host = await hostSupervisor();
  const kb = (b: number) => `${(b / 1024).toFixed(2)} KB`;
  const ms = (v: number) => `${v.toFixed(3)} ms`;
  console.log(`Session actors and passivation, N = ${N} sessions, ${new Date().toISOString().slice(0, 10)}`);
  console.log(
    `node ${process.version}, ${os.cpus().length} cores, load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  const rows: Array<[string, string, string, string]> = [
    ["bare createActor(sessionMachine), idle", kb(bare.perActor), ms(bare.start.p50), ms(bare.start.p99)],
    ["host: passivated session (rows only)", kb(host.perPassivatedAfter), "", ""],
    ["host: active session (loaded, idle actor)", kb(host.perActive), "", ""],
    ["host: activation, sequential", "", ms(host.activation.p50), ms(host.activation.p99)],
    [
      `host: activation, 32 in flight (${Math.round(host.concurrentRate)}/s)`,
      "",
      ms(host.concurrent.p50),
      ms(host.concurrent.p99),
    ],
    ["floor: PK SELECT", "", ms(host.floor.p50), ms(host.floor.p99)],
  ];
  const widths = [46, 14, 11, 11];
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(line(["case", "heap/session", "time p50", "time p99"]));
  console.log(line(widths.map((w) => "-".repeat(w))));
  for (const r of rows) console.log(line(r));
  console.log(`host process CPU per sequential activation: ${ms(host.cpuPerActivationMs)}`);
  console.log(
    `passivated: heap after activating and then passivating all ${host.stoppedCount} actors, against the heap before any activation`,
  );
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
