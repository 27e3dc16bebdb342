// docs/protocol.md "Startup fence": a superseded incarnation of a host cannot commit. In Postgres (migration 9): a writer
// connection of a stale incarnation is refused on every guarded table while the current one and
// plain connections write; the startup fence waits for a write in flight and the writer's next
// write is refused. End to end with real processes: host A is paused, a newer incarnation of the
// same host id runs its fence, A resumes and answers its first write HOST_FENCED with nothing
// committed, then exits (code 3); the next incarnation serves normally.
import pg from "pg";
import { describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { createDb, isWriteFenced, WRITE_FENCED_SQLSTATE } from "../services/host/store/db.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import { runStartupFence } from "../services/host/store/startup-fence.ts";
import { unwrap } from "../services/protocol/result.ts";
import { startHost } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";
import type { TestDatabase } from "./support/test-db.ts";
import { refusalCode } from "./support/worker-double.ts";

const silent = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Parameters<
  typeof runStartupFence
>[0]["log"];

describe("write fence in Postgres", () => {
  let tdb: TestDatabase;
  useStack("writefence", {
    async setup(s) {
      tdb = s.db;
      await migrateUp({ databaseUrl: tdb.url });
    },
  });

  /** A connection as host `hostId` incarnation `incarnation` would open it (db.ts writer options). */
  async function writer(hostId: string, incarnation: number): Promise<pg.Client> {
    const c = new pg.Client({
      connectionString: tdb.url,
      options: `-c pihost.host_id=${hostId} -c pihost.incarnation=${incarnation}`,
    });
    await c.connect();
    return c;
  }
  /** One start's fence of `hostId` on the test's database (a refusal fails the test). */
  const fence = async (hostId: string) =>
    unwrap(await runStartupFence({ db: tdb.pool, clock: createClock(), hostId, log: silent }));
  const setting = (c: pg.Client | pg.Pool, key: string) =>
    c.query("INSERT INTO app_settings (key, value) VALUES ($1, '{}')", [key]);
  const keys = async () =>
    (await tdb.pool.query("SELECT key FROM app_settings ORDER BY key")).rows.map((r) => r.key);

  it("refuses a stale incarnation on every guarded table, lets the current one and plain connections write", async () => {
    const first = await fence("hx");
    expect(first.incarnation).toBe(1);
    await fence("hx");
    const stale = await writer("hx", 1);
    const current = await writer("hx", 2);
    const unknown = await writer("nobody", 1);
    try {
      const err = await setting(stale, "from-stale").catch((e) => e);
      expect(isWriteFenced(err)).toBe(true);
      expect((err as { code: string }).code).toBe(WRITE_FENCED_SQLSTATE);
      expect(isWriteFenced(await setting(unknown, "from-unknown").catch((e) => e))).toBe(true);
      await setting(current, "from-current");
      await setting(tdb.pool, "from-plain");
      expect(await keys()).toEqual(["from-current", "from-plain"]);
      // Every table the host writes is guarded: an UPDATE or DELETE that matches nothing is refused too.
      const tables = await tdb.pool.query(
        `SELECT event_object_table AS t FROM information_schema.triggers
          WHERE trigger_name = 'write_fence' GROUP BY 1 ORDER BY 1`,
      );
      expect(tables.rows.map((r) => r.t)).toEqual([
        "app_settings",
        "audit_log",
        "permission_grants",
        "permission_requests",
        "plan_approvals",
        "plugins",
        "project_members",
        "projects",
        "scheduled_runs",
        "scheduled_tasks",
        "session_event_seqs",
        "session_events",
        "session_leases",
        "sessions",
        "tool_call_starts",
        "tool_calls",
        "transcript_entries",
        "turns",
      ]);
      for (const { t } of tables.rows) {
        const del = await stale.query(`DELETE FROM ${t} WHERE false`).catch((e) => e);
        expect({ t, fenced: isWriteFenced(del) }).toEqual({ t, fenced: true });
      }
      // The session-scoped ones also check the session's lease row by row (migration 13, PH002).
      const leased = await tdb.pool.query(
        `SELECT event_object_table AS t FROM information_schema.triggers
          WHERE trigger_name = 'session_lease' GROUP BY 1 ORDER BY 1`,
      );
      expect(leased.rows.map((r) => r.t)).toEqual([
        "permission_grants",
        "permission_requests",
        "plan_approvals",
        "scheduled_runs",
        "session_leases",
        "sessions",
        "tool_call_starts",
        "tool_calls",
        "transcript_entries",
        "turns",
      ]);
    } finally {
      await Promise.all([stale.end(), current.end(), unknown.end()]);
    }
  });

  it("the startup fence waits for a write in flight; afterwards that incarnation's writes are refused", async () => {
    const { incarnation } = await fence("hy");
    const old = await writer("hy", incarnation);
    try {
      await old.query("BEGIN");
      await setting(old, "in-flight");
      let fenced = false;
      const next = runStartupFence({ db: tdb.pool, clock: createClock(), hostId: "hy", log: silent }).then(
        (r) => {
          fenced = true;
          return r;
        },
      );
      await new Promise((r) => setTimeout(r, 300));
      expect(fenced).toBe(false);
      await old.query("COMMIT");
      expect(unwrap(await next).incarnation).toBe(incarnation + 1);
      expect(await keys()).toContain("in-flight");
      expect(isWriteFenced(await setting(old, "after-fence").catch((e) => e))).toBe(true);
      expect(await keys()).not.toContain("after-fence");
    } finally {
      await old.end();
    }
  });

  it("a pool opened as a writer reports the first refusal once", async () => {
    const seen: string[] = [];
    const { incarnation } = await fence("hz");
    const db = createDb(tdb.url, { writer: { hostId: "hz", incarnation, onFenced: (m) => seen.push(m) } });
    try {
      await db.query("INSERT INTO app_settings (key, value) VALUES ('hz-ok', '{}')");
      await fence("hz");
      for (const key of ["hz-1", "hz-2"])
        expect(
          isWriteFenced(
            await db.query("INSERT INTO app_settings (key, value) VALUES ($1, '{}')", [key]).catch((e) => e),
          ),
        ).toBe(true);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatch(/host hz incarnation \d+ is fenced/);
    } finally {
      await db.end();
    }
  });
});

describe("a superseded host process", () => {
  const stack = useStack("writefenceproc", { extra: { PI_HOST_ID: "fenced-host" } });

  it("answers its first write HOST_FENCED with nothing committed, then exits; the newer incarnation serves", async () => {
    const a = await stack.startHost();
    const alice = stack.client("alice");
    const project = (name: string) =>
      alice.call("projects.create", { name, workspaceRoot: stack.newWorkspace(name) });
    await project("before");

    // A is paused (a long GC, a frozen VM); meanwhile a newer incarnation with the same id fences.
    a.child.kill("SIGSTOP");
    const b = startHost(stack.env);
    await b.waitForEvent("host.ready");
    await b.kill(); // it may even be gone again: the fence alone supersedes A
    a.child.kill("SIGCONT");

    // Its first write is refused by the fence: this request's, or (when its scheduler's tick writes
    // first) an earlier one, after which it is already stopping. Either way a retriable refusal.
    expect(["HOST_FENCED", "HOST_SHUTTING_DOWN", "HOST_UNAVAILABLE"]).toContain(
      await refusalCode(project("from-stale")),
    );
    expect(await a.exited).toBe(3);
    expect(a.lines.some((l) => l.includes('"event":"host.fenced"'))).toBe(true);
    const names = await stack.db.pool.query("SELECT name FROM projects ORDER BY name");
    expect(names.rows.map((r) => r.name)).toEqual(["before"]);

    await stack.startHost();
    expect((await project("after")).name).toBe("after");
    const hosts = await stack.db.pool.query("SELECT incarnation FROM hosts WHERE id = 'fenced-host'");
    expect(hosts.rows).toEqual([{ incarnation: 3 }]);
  });
});
