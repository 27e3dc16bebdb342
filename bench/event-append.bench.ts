// Benchmark (not a test): session event appends through the host's own event store, from 1, 8 and 32
// concurrent sessions in this process and from two host processes at once, against a bare INSERT +
// commit of the same body at the same concurrency, measured in the same run. While each case runs,
// pg_stat_activity is sampled every 5 ms for pi-host connections waiting on an advisory lock (the
// goal: never). Run: `npm run bench:events` (needs Postgres like the tests; BENCH_N appends per
// case, default 4000). With `--child <databaseUrl> <hostId> <first> <count> <n>` it is one of the
// two processes of the last case.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createClock } from "../services/host/clock.ts";
import { createDb, type Db } from "../services/host/store/db.ts";
import { createEventStore } from "../services/host/store/event-store.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import { runStartupFence } from "../services/host/store/startup-fence.ts";
import { unwrap } from "../services/protocol/result.ts";
import { createTestDatabase } from "../tests/support/test-db.ts";

const N = Number(process.env.BENCH_N || 4000);
const SESSIONS = 64;
const silent = { info() {}, warn() {}, error() {} };
const BODY = {
  turnId: "turn_bench",
  toolCallId: "c1",
  tool: "Read",
  decision: "allow",
  isError: false,
  text: "x".repeat(200),
};

/** Runs `n` calls spread over `concurrency` loops (loop k always on session k); events per second. */
async function throughput(
  n: number,
  concurrency: number,
  call: (k: number) => Promise<unknown>,
): Promise<number> {
  let left = n;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async (_, k) => {
      while (left > 0) {
        left -= 1;
        await call(k);
      }
    }),
  );
  return (n / (performance.now() - t0)) * 1000;
}

/** Samples pg_stat_activity while `work` runs: how often a pi-host backend waited on an advisory lock. */
async function sampled<T>(
  admin: Db,
  work: () => Promise<T>,
): Promise<{ value: T; samples: number; waits: number }> {
  let done = false;
  let samples = 0;
  let waits = 0;
  const sampler = (async () => {
    while (!done) {
      const r = await admin.query(
        `SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE application_name LIKE 'pi-host%' AND wait_event_type = 'Lock' AND wait_event = 'advisory'`,
      );
      samples += 1;
      waits += r.rows[0].n > 0 ? 1 : 0;
      await new Promise((res) => setTimeout(res, 5));
    }
  })();
  try {
    return { value: await work(), samples, waits };
  } finally {
    done = true;
    await sampler;
  }
}

async function writer(url: string, hostId: string, max: number): Promise<Db> {
  const fenceDb = createDb(url, { max: 1 });
  const { incarnation } = unwrap(
    await runStartupFence({ db: fenceDb, clock: createClock(), hostId, log: silent }),
  );
  await fenceDb.end();
  return createDb(url, { max, writer: { hostId, incarnation, onFenced() {} } });
}

async function seed(db: Db, hostId: string, first: number, count: number): Promise<string[]> {
  await db.query(
    `INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ('prj_bench', 'b', '/tmp/bench-events', 'alice', now())
     ON CONFLICT DO NOTHING`,
  );
  const ids = Array.from({ length: count }, (_, i) => `ses_bench_${first + i}`);
  await db.query(
    `INSERT INTO sessions (id, project_id, owner, mode, provider, model, created_at, updated_at)
     SELECT id, 'prj_bench', 'alice', 'agent', 'scripted', 'demo', now(), now() FROM unnest($1::text[]) id`,
    [ids],
  );
  await db.query(
    `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
     SELECT id, $2, 1, now(), (SELECT incarnation FROM hosts WHERE id = $2) FROM unnest($1::text[]) id`,
    [ids, hostId],
  );
  return ids;
}

/** One of the two host processes: appends `n` events over its sessions, prints its rate. */
async function child(url: string, hostId: string, first: number, count: number, n: number): Promise<void> {
  const db = await writer(url, hostId, count);
  const ids = await seed(db, hostId, first, count);
  const store = createEventStore({ db, clock: createClock() });
  const bare = process.env.BENCH_BARE === "1";
  process.stdout.write("ready\n");
  await new Promise<void>((resolve) => process.stdin.once("data", () => resolve()));
  const rate = await throughput(n, count, (k) =>
    bare
      ? db.query("INSERT INTO bench_bare (session_id, body) VALUES ($1, $2::jsonb)", [
          ids[k],
          JSON.stringify(BODY),
        ])
      : store.append(ids[k]!, "tool.result", BODY, new Date()),
  );
  process.stdout.write(`${JSON.stringify({ rate })}\n`);
  await db.end();
}

/** Two child processes started together; their combined rate. */
async function twoProcesses(url: string, n: number, bare: boolean, round: number): Promise<number> {
  const me = fileURLToPath(import.meta.url);
  const kids = [0, 1].map((i) =>
    spawn(
      process.execPath,
      [
        "--import",
        "tsx",
        me,
        "--child",
        url,
        `bench-p${i}-${round}`,
        String(1000 * (i + 1) + round * 100),
        "16",
        String(n / 2),
      ],
      {
        env: { ...process.env, BENCH_BARE: bare ? "1" : "0" },
        stdio: ["pipe", "pipe", "inherit"],
      },
    ),
  );
  const lines = kids.map((k) => {
    const out: string[] = [];
    let buf = "";
    k.stdout.setEncoding("utf8");
    k.stdout.on("data", (d: string) => {
      buf += d;
      const parts = buf.split("\n");
      buf = parts.pop() ?? "";
      out.push(...parts);
    });
    return out;
  });
  const waitFor = (i: number, pred: (l: string) => boolean) =>
    new Promise<string>((resolve, reject) => {
      const t = setInterval(() => {
        const l = lines[i]!.find(pred);
        if (l) {
          clearInterval(t);
          resolve(l);
        }
      }, 5);
      kids[i]!.once("exit", (code) => code !== 0 && reject(new Error(`child exited ${code}`)));
    });
  await Promise.all([0, 1].map((i) => waitFor(i, (l) => l === "ready")));
  for (const k of kids) k.stdin.write("go\n");
  const rates = await Promise.all([0, 1].map((i) => waitFor(i, (l) => l.startsWith("{"))));
  return rates.reduce((sum, l) => sum + (JSON.parse(l) as { rate: number }).rate, 0);
}

async function main(): Promise<void> {
  const tdb = await createTestDatabase("bench_events");
  try {
    await migrateUp({ databaseUrl: tdb.url });
    await tdb.pool.query(
      "CREATE TABLE bench_bare (id bigserial PRIMARY KEY, session_id text NOT NULL, body jsonb NOT NULL)",
    );
    const db = await writer(tdb.url, "bench-h", SESSIONS);
    const ids = await seed(db, "bench-h", 0, SESSIONS);
    const store = createEventStore({ db, clock: createClock() });
    const append = (k: number) => store.append(ids[k]!, "tool.result", BODY, new Date());
    const bare = (k: number) =>
      db.query("INSERT INTO bench_bare (session_id, body) VALUES ($1, $2::jsonb)", [
        ids[k],
        JSON.stringify(BODY),
      ]);
    await throughput(500, 8, append);
    await throughput(500, 8, bare);
    const rows: string[] = [];
    const line = (name: string, events: number, floor: number, waits: string) =>
      rows.push(
        `${name.padEnd(34)}${events.toFixed(0).padStart(9)}/s${floor.toFixed(0).padStart(9)}/s${(events / floor).toFixed(2).padStart(7)}x   ${waits}`,
      );
    for (const c of [1, 8, 32]) {
      const f = await sampled(tdb.pool, () => throughput(N, c, bare));
      const e = await sampled(tdb.pool, () => throughput(N, c, append));
      line(
        `${c} session${c === 1 ? "" : "s"} in one process`,
        e.value,
        f.value,
        `${e.waits}/${e.samples} samples`,
      );
    }
    const f2 = await sampled(tdb.pool, () => twoProcesses(tdb.url, N, true, 0));
    const e2 = await sampled(tdb.pool, () => twoProcesses(tdb.url, N, false, 1));
    line("2 host processes, 16 sessions each", e2.value, f2.value, `${e2.waits}/${e2.samples} samples`);
    console.log(`event appends, n=${N} per case, ${new Date().toISOString()}`);
    console.log(
      `${"case".padEnd(34)}${"events".padStart(11)}${"bare".padStart(11)}${"ratio".padStart(8)}   advisory-lock waits`,
    );
    for (const r of rows) console.log(r);
    await db.end();
  } finally {
    await tdb.drop();
  }
}

if (process.argv[2] === "--child") {
  const [, , , url, hostId, first, count, n] = process.argv;
  await child(url!, hostId!, Number(first), Number(count), Number(n));
  process.exit(0);
} else {
  await main();
  process.exit(0);
}
