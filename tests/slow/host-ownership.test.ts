// Several hosts, one database (issue #16): each session is owned by the host its lease names.
// Store level (real Postgres, writer pools of distinct host ids): a write to another host's session
// is refused with SESSION_LEASE_LOST and changes nothing; twenty concurrent takeovers of one dead
// host have exactly one winner. Processes (distinct PI_HOST_ID values, one database and prefix): a
// second host leaves the first one's approval alone; a second process with the same id exits
// HOST_ID_IN_USE; a SIGKILLed host's sessions are taken over within about a lease; a host whose
// clock runs ten minutes ahead but beats is never declared dead.
import { describe, expect, it } from "vitest";
import { createClock } from "../../services/host/clock.ts";
import { createDb, type Db, fencedAppError, isLeaseLost } from "../../services/host/store/db.ts";
import { migrateUp } from "../../services/host/store/migrate.ts";
import { reportOrphanArtifacts } from "../../services/host/store/orphan-artifacts.ts";
import { leaseOf } from "../../services/host/store/session-leases.ts";
import { runStartupFence } from "../../services/host/store/startup-fence.ts";
import { unwrap } from "../../services/protocol/result.ts";
import { takeOverHost } from "../../services/host/store/takeover.ts";
import { startHost } from "../support/processes.ts";
import { eventually } from "../support/stack.ts";
import { useStack } from "../support/stack-fixture.ts";
import type { TestDatabase } from "../support/test-db.ts";
import { isEvent } from "../support/events.ts";

const silent = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Parameters<
  typeof runStartupFence
>[0]["log"];
const T = new Date("2026-12-01T10:00:00.000Z");

describe("session leases in Postgres", () => {
  let tdb: TestDatabase;
  useStack("hostown", {
    async setup(s) {
      tdb = s.db;
      await migrateUp({ databaseUrl: tdb.url });
      await tdb.pool.query(
        "INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ('prj', 'p', '/tmp/p', 'alice', $1)",
        [T],
      );
    },
  });
  const q = (sql: string, params: unknown[] = []) => tdb.pool.query(sql, params);

  async function host(id: string): Promise<{ db: Db; incarnation: number }> {
    const { incarnation } = unwrap(
      await runStartupFence({
        db: tdb.pool,
        clock: createClock(),
        hostId: id,
        log: silent,
      }),
    );
    return {
      db: createDb(tdb.url, { max: 2, writer: { hostId: id, incarnation, onFenced() {} } }),
      incarnation,
    };
  }
  /** A session leased to `hostId`, with a running turn and a pending approval. */
  async function session(id: string, hostId: string): Promise<void> {
    await q(
      `INSERT INTO sessions (id, project_id, owner, mode, provider, model, created_at, updated_at)
       VALUES ($1, 'prj', 'alice', 'plan', 'scripted', 'demo', $2, $2)`,
      [id, T],
    );
    await q(
      `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
       SELECT $1, id, 1, $3, incarnation FROM hosts WHERE id = $2`,
      [id, hostId, T],
    );
    await q(
      "INSERT INTO turns (id, session_id, kind, status, created_at) VALUES ($1, $2, 'prompt', 'running', $3)",
      [`turn_${id}`, id, T],
    );
    await q(
      `INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
         artifact_path, artifact_sha256, artifact_size, status, created_at, deadline)
       VALUES ($1, $1, $2, $3, 'call', 't', 'q', '# p', $4, 'sha', 3, 'pending', $5, $6)`,
      [`pa_${id}`, id, `turn_${id}`, `.pi/plan/${id}.md`, T, new Date(T.getTime() + 3_600_000)],
    );
  }

  it("the orphan-artifact scan skips a project another running host has a session in, and only reports", async () => {
    await host("orph-me");
    await host("orph-other");
    await q(
      "INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ('prj_o1', 'o1', '/tmp/o1', 'alice', $1), ('prj_o2', 'o2', '/tmp/o2', 'alice', $1)",
      [T],
    );
    for (const [sid, prj, h] of [
      ["ses_o1", "prj_o1", "orph-other"],
      ["ses_o2", "prj_o2", "orph-me"],
    ] as const) {
      await q(
        `INSERT INTO sessions (id, project_id, owner, mode, provider, model, created_at, updated_at)
         VALUES ($1, $2, 'alice', 'plan', 'scripted', 'demo', $3, $3)`,
        [sid, prj, T],
      );
      await q(
        `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
         SELECT $1, id, 1, $3, incarnation FROM hosts WHERE id = $2`,
        [sid, h, T],
      );
    }
    // Every workspace lists one plan file no row names (the other host may be about to commit its row).
    const listPlanFiles = async () => ["in-flight-20261201-000000Z.md"];
    const scan = () => reportOrphanArtifacts({ db: tdb.pool, log: silent, hostId: "orph-me", listPlanFiles });
    const projectsOf = (r: Array<{ projectId: string }>) =>
      r.map((o) => o.projectId).filter((id) => id.startsWith("prj_o"));
    expect(projectsOf(await scan())).toEqual(["prj_o2"]);
    // Once that host is no longer running, its project is scanned too.
    await q("UPDATE hosts SET state = 'stopped' WHERE id = 'orph-other'");
    expect(projectsOf(await scan())).toEqual(["prj_o1", "prj_o2"]);
  });

  it("refuses a write to a session another host owns with SESSION_LEASE_LOST, changing nothing", async () => {
    const a = await host("lease-a");
    const b = await host("lease-b");
    try {
      await session("ses_a", "lease-a");
      const before = (await q("SELECT row_to_json(s)::text AS r FROM sessions s WHERE id = 'ses_a'")).rows;
      const writes = [
        () => b.db.query("UPDATE sessions SET title = 'b' WHERE id = 'ses_a'"),
        () =>
          b.db.query(
            "INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at) VALUES ('ses_a', 'turn_ses_a', 'user', '{}', $1)",
            [T],
          ),
        () => b.db.query("UPDATE turns SET status = 'aborted' WHERE session_id = 'ses_a'"),
        () => b.db.query("UPDATE plan_approvals SET status = 'interrupted' WHERE session_id = 'ses_a'"),
        () => b.db.query("UPDATE session_leases SET epoch = epoch + 1 WHERE session_id = 'ses_a'"),
        () => b.db.query("DELETE FROM session_leases WHERE session_id = 'ses_a'"),
        // The attack: B writes itself over A's lease while A runs (no takeover).
        () =>
          b.db.query(
            `UPDATE session_leases SET host_id = 'lease-b', incarnation = ${b.incarnation}, epoch = epoch + 1 WHERE session_id = 'ses_a'`,
          ),
      ];
      for (const w of writes) {
        const err = await w().then(
          () => null,
          (e) => e,
        );
        expect(isLeaseLost(err)).toBe(true);
        expect(fencedAppError(err)?.code).toBe("SESSION_LEASE_LOST");
      }
      expect((await q("SELECT row_to_json(s)::text AS r FROM sessions s WHERE id = 'ses_a'")).rows).toEqual(
        before,
      );
      expect((await q("SELECT status FROM turns WHERE session_id = 'ses_a'")).rows).toEqual([
        { status: "running" },
      ]);
      expect(
        (await q("SELECT count(*)::int AS n FROM transcript_entries WHERE session_id = 'ses_a'")).rows[0].n,
      ).toBe(0);
      expect(await leaseOf(tdb.pool, "ses_a")).toEqual({
        hostId: "lease-a",
        incarnation: a.incarnation,
        epoch: 1,
        hostState: "running",
      });
      // The owner writes; a plain connection (no host settings) is not checked.
      await a.db.query("UPDATE sessions SET title = 'a' WHERE id = 'ses_a'");
      await q("UPDATE sessions SET title = 'plain' WHERE id = 'ses_a'");
    } finally {
      await Promise.all([a.db.end(), b.db.end()]);
    }
  });

  it("twenty concurrent takeovers of one dead host: one winner, one audit row per item, epoch + 1", async () => {
    const dead = await host("race-dead");
    await dead.db.end();
    await session("ses_r1", "race-dead");
    await session("ses_r2", "race-dead");
    const other = await host("race-bystander");
    await session("ses_keep", "race-bystander");
    const takers = await Promise.all(Array.from({ length: 20 }, (_, i) => host(`race-t${i}`)));
    try {
      const { heartbeat } = (await q("SELECT heartbeat::int FROM hosts WHERE id = 'race-dead'")).rows[0];
      const results = await Promise.all(
        takers.map((t, i) =>
          takeOverHost({
            db: t.db,
            clock: createClock(),
            hostId: `race-t${i}`,
            incarnation: t.incarnation,
            deadHostId: "race-dead",
            observedHeartbeat: heartbeat,
            log: silent,
          }),
        ),
      );
      const winners = results.flatMap((r, i) => (r ? [{ r, i }] : []));
      expect(winners).toHaveLength(1);
      const { r, i } = winners[0]!;
      expect(r).toMatchObject({ approvalsInterrupted: 2, turnsAborted: 2, deadHostId: "race-dead" });
      expect(r.sessionIds.sort()).toEqual(["ses_r1", "ses_r2"]);
      const leases = (
        await q(
          "SELECT session_id, host_id, epoch::int, incarnation FROM session_leases WHERE session_id IN ('ses_keep', 'ses_r1', 'ses_r2') ORDER BY 1",
        )
      ).rows;
      expect(leases).toEqual([
        { session_id: "ses_keep", host_id: "race-bystander", epoch: 1, incarnation: other.incarnation },
        { session_id: "ses_r1", host_id: `race-t${i}`, epoch: 2, incarnation: takers[i]!.incarnation },
        { session_id: "ses_r2", host_id: `race-t${i}`, epoch: 2, incarnation: takers[i]!.incarnation },
      ]);
      const audit = await q(
        "SELECT action, session_id, count(*)::int AS n FROM audit_log WHERE action LIKE 'takeover.%' GROUP BY 1, 2 ORDER BY 1, 2",
      );
      expect(audit.rows).toEqual([
        { action: "takeover.approval", session_id: "ses_r1", n: 1 },
        { action: "takeover.approval", session_id: "ses_r2", n: 1 },
        { action: "takeover.turn", session_id: "ses_r1", n: 1 },
        { action: "takeover.turn", session_id: "ses_r2", n: 1 },
      ]);
      // The bystander's session is untouched; the dead host is fenced.
      expect((await q("SELECT status FROM plan_approvals WHERE session_id = 'ses_keep'")).rows).toEqual([
        { status: "pending" },
      ]);
      const d = (await q("SELECT state, incarnation FROM hosts WHERE id = 'race-dead'")).rows[0];
      expect(d).toEqual({ state: "dead", incarnation: dead.incarnation + 1 });
      // A counter that moved since it was observed: no takeover.
      expect(
        await takeOverHost({
          db: takers[0]!.db,
          clock: createClock(),
          hostId: "race-t0",
          incarnation: takers[0]!.incarnation,
          deadHostId: "race-bystander",
          observedHeartbeat: -1,
          log: silent,
        }),
      ).toBeNull();
    } finally {
      await Promise.all([other.db.end(), ...takers.map((t) => t.db.end())]);
    }
  });
});

describe("host processes on one database", () => {
  const stack = useStack("hostownproc", { worker: true, extra: { PI_HOST_ID: "own-a" } });
  const env = (id: string) => ({ ...stack.env, extra: { ...stack.env.extra, PI_HOST_ID: id } });
  const q = (sql: string, params: unknown[] = []) => stack.db.pool.query(sql, params);

  /** A Plan session on the only running host, left with a pending approval. */
  async function pendingApproval(name: string): Promise<{ sessionId: string; proposalId: string }> {
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", {
      name,
      workspaceRoot: stack.newWorkspace(name),
    });
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "plan",
      model: {
        provider: "scripted",
        model: "script",
        script: [
          {
            toolCalls: [{ name: "ExitPlanMode", args: { title: name, markdown: "# p\n", question: "Go?" } }],
          },
          { text: "done" },
        ],
      },
    });
    await alice.call("session.prompt", { sessionId: session.id, text: "plan" });
    const proposalId = await eventually(async () => {
      const r = await q(
        `SELECT pa.id FROM plan_approvals pa JOIN tool_calls tc ON tc.turn_id = pa.turn_id AND tc.tool = 'ExitPlanMode'
          WHERE pa.session_id = $1 AND pa.status = 'pending'`,
        [session.id],
      );
      return r.rows[0]?.id as string | undefined;
    });
    return { sessionId: session.id, proposalId };
  }
  const approval = async (id: string) =>
    (await q("SELECT status, error_code FROM plan_approvals WHERE id = $1", [id])).rows[0];

  it("a second host leaves the first one's approval alone; SIGKILL the first: the second takes its sessions over once", async () => {
    const a = await stack.startHost();
    const { sessionId, proposalId } = await pendingApproval("own-a");
    const b = startHost(env("own-b"));
    try {
      await b.waitForEvent("host.ready");
      // B's own session with pending work (rows as its store would write them).
      await q(
        `INSERT INTO sessions (id, project_id, owner, mode, provider, model, created_at, updated_at)
         SELECT 'ses_b', project_id, owner, 'plan', 'scripted', 'demo', created_at, updated_at FROM sessions WHERE id = $1`,
        [sessionId],
      );
      await q(
        `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
         SELECT 'ses_b', id, 1, now(), incarnation FROM hosts WHERE id = 'own-b'`,
      );
      await q(
        "INSERT INTO turns (id, session_id, kind, status, created_at) VALUES ('turn_b', 'ses_b', 'prompt', 'running', now())",
      );
      // Longer than a lease (1.5 s in tests): A beats, so B takes nothing.
      await new Promise((r) => setTimeout(r, 2_500));
      expect(await approval(proposalId)).toEqual({ status: "pending", error_code: null });
      expect((await leaseOf(stack.db.pool, sessionId))?.hostId).toBe("own-a");
      expect(b.lines.some((l) => l.includes('"event":"host.takeover"'))).toBe(false);

      const events = stack.events(sessionId);
      const killedAt = Date.now();
      await a.kill();
      const took = await b.waitForEvent("host.takeover", 15_000);
      const tookMs = Date.now() - killedAt;
      // One lease (1.5 s) + one heartbeat (0.3 s), with room for a loaded machine.
      expect(tookMs).toBeLessThan(1_500 + 300 + 2_500);
      expect(took).toMatchObject({ deadHostId: "own-a", approvalsInterrupted: 1, sessions: 1 });
      expect(await approval(proposalId)).toEqual({
        status: "interrupted",
        error_code: "PLAN_APPROVAL_INTERRUPTED",
      });
      const interrupted = await events.waitFor(isEvent("plan.changed", (e) => e.action === "interrupted"));
      expect(interrupted.proposal).toMatchObject({ proposalId, status: "interrupted" });
      expect(await leaseOf(stack.db.pool, sessionId)).toMatchObject({ hostId: "own-b", epoch: 2 });
      const audit = await q(
        "SELECT count(*)::int AS n FROM audit_log WHERE action = 'takeover.approval' AND session_id = $1",
        [sessionId],
      );
      expect(audit.rows[0].n).toBe(1);
      // B's own session is untouched.
      expect((await q("SELECT status FROM turns WHERE id = 'turn_b'")).rows).toEqual([{ status: "running" }]);
      expect((await q("SELECT state FROM hosts WHERE id = 'own-a'")).rows).toEqual([{ state: "dead" }]);
      // Nothing is taken twice.
      await new Promise((r) => setTimeout(r, 1_000));
      expect(b.lines.filter((l) => l.includes('"event":"host.takeover"'))).toHaveLength(1);
    } finally {
      await b.kill();
    }
  });

  /** The environment for a host with this id, or with the default id (PI_HOST_ID unset: host-<hostname>). */
  const envFor = (id: string | null) => {
    if (id !== null) return env(id);
    const { PI_HOST_ID: _drop, ...extra } = stack.env.extra ?? {};
    return { ...stack.env, extra };
  };
  it.each([
    ["a distinct id", "own-same"],
    ["the default id", null],
  ])(
    "a second process with %s exits HOST_ID_IN_USE; after a SIGKILL a new start waits one lease and fences",
    async (_what, hostId) => {
      const a = startHost(envFor(hostId));
      await a.waitForEvent("host.ready");
      const id = hostId ?? String((await a.waitForEvent("host.ready")).hostId);
      if (hostId === null) expect(id).toMatch(/^host-/);
      const twin = startHost(envFor(hostId));
      expect(await twin.exited).toBe(2);
      expect(twin.lines.some((l) => l.includes('"event":"host.id_in_use"'))).toBe(true);
      expect(twin.lines.some((l) => l.includes('"event":"host.fence"'))).toBe(false);
      const inc = (await q("SELECT incarnation FROM hosts WHERE id = $1", [id])).rows[0].incarnation;

      await a.kill();
      const startedAt = Date.now();
      const again = startHost(envFor(hostId));
      try {
        await again.waitForEvent("host.id_check");
        const fence = await again.waitForEvent("host.fence");
        expect(Date.now() - startedAt).toBeGreaterThanOrEqual(1_500);
        expect(fence).toMatchObject({ incarnation: inc + 1 });
      } finally {
        await again.kill();
      }
    },
  );

  it("three simultaneous starts of a fresh id: one serves, the other two exit HOST_ID_IN_USE (2), never 1", async () => {
    // The finding: of three starts of a fresh PI_HOST_ID, one exited 1 after fencing (its writes
    // were refused as superseded) instead of 2 before it changed anything.
    for (const round of [1, 2]) {
      const id = `trio-${round}`;
      const starts = [0, 1, 2].map(() => startHost(env(id)));
      const outcomes = await Promise.all(
        starts.map((p) =>
          Promise.race([
            p.waitForEvent("host.ready", 60_000).then(() => "ready" as const),
            p.exited.then((code) => code),
          ]),
        ),
      );
      try {
        expect(outcomes.filter((o) => o === "ready")).toHaveLength(1);
        expect(outcomes.filter((o) => o === 2)).toHaveLength(2);
        for (const [i, p] of starts.entries())
          if (outcomes[i] === 2)
            expect(p.lines.some((l) => l.includes('"event":"host.id_in_use"'))).toBe(true);
        // One incarnation was made, by the one that serves.
        expect((await q("SELECT incarnation FROM hosts WHERE id = $1", [id])).rows).toEqual([
          { incarnation: 1 },
        ]);
      } finally {
        await Promise.all(starts.map((p) => p.kill()));
      }
    }
  });

  it("a host whose clock runs ten minutes ahead but beats is not declared dead", async () => {
    const skewed = startHost(env("own-skew"));
    await skewed.waitForEvent("host.ready");
    // The test hooks answer on one subject: the clock moves while the skewed host is the only one.
    const { now } = await stack.hook("clock.advance", { ms: 600_000 });
    expect(now - Date.now()).toBeGreaterThan(590_000);
    const other = startHost(env("own-plain"));
    try {
      await other.waitForEvent("host.ready");
      // Two leases and more: each observes the other's counter moving.
      await new Promise((r) => setTimeout(r, 4_000));
      const states = (
        await q("SELECT id, state FROM hosts WHERE id IN ('own-skew', 'own-plain') ORDER BY id")
      ).rows;
      expect(states).toEqual([
        { id: "own-plain", state: "running" },
        { id: "own-skew", state: "running" },
      ]);
      // (Hosts the earlier tests SIGKILLed may be taken over; these two never are.)
      for (const p of [skewed, other])
        expect(
          p.lines.some(
            (l) => l.includes('"event":"host.takeover"') && /"deadHostId":"own-(skew|plain)"/.test(l),
          ),
        ).toBe(false);
    } finally {
      await Promise.all([skewed.kill(), other.kill()]);
    }
  });
});
