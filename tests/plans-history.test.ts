import { describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { createDb, type Db } from "../services/host/store/db.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import type { ProposalHistoryPage, ProposalView, SessionView } from "../services/protocol/schemas.ts";
import { pendingProposal, planStores } from "./support/plan-store.ts";
import { jsonError, jsonOut, pihost } from "./support/cli.ts";
import { approveProposal, exitPlanStep, isPlanChanged, rows, writeStep } from "./support/plans.ts";
import { addMembers, type EventCollector, eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import type { TestDatabase } from "./support/test-db.ts";
import { refusalCode } from "./support/worker-double.ts";
import { isEvent } from "./support/events.ts";

const TITLES = ["Rejected plan", "Interrupted plan", "Expired plan", "Approved plan", "Pending plan"];

/** The proposal of the `plan.changed` awaiting approval with this title (events seen so far included). */
async function awaiting(events: EventCollector, title: string): Promise<ProposalView> {
  const e = await events.waitFor(
    isEvent("plan.changed", (x) => x.state === "awaiting_approval" && x.proposal?.title === title),
    30_000,
  );
  return e.proposal!;
}

describe("plans.history over NATS with the host and the scripted worker", () => {
  const stack = useStack("history", { host: true, worker: true });
  const history = (sessionId: string, extra: Record<string, unknown> = {}, principal = "alice") =>
    stack.client(principal).call("plans.history", { sessionId, ...extra });

  /** A prompt once the session's actor is idle again (a just-ended plan may still be settling). */
  const promptWhenIdle = (sessionId: string, text: string) =>
    eventually(
      () => stack.client("alice").call("session.prompt", { sessionId, text }),
      20_000,
      `prompt ${text}`,
    );

  let session: SessionView;
  const ids: Record<string, string> = {};

  it("lists rejected, interrupted, expired, approved and pending plans with their status, newest first", async () => {
    const ws = stack.newWorkspace("history");
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", { name: "history", workspaceRoot: ws });
    // carol approves; bob is a member of the project but no approver of the session.
    await addMembers(stack, project.id, ["carol", "bob"]);
    session = await alice.call("session.create", {
      projectId: project.id,
      mode: "plan",
      approvers: ["carol"],
      model: {
        provider: "scripted",
        model: "script",
        script: [
          exitPlanStep(TITLES[0]!),
          exitPlanStep(TITLES[1]!),
          exitPlanStep(TITLES[2]!),
          exitPlanStep(TITLES[3]!),
          writeStep("done.txt"),
          { text: "Done." },
          exitPlanStep(TITLES[4]!),
        ],
      },
    });
    const events = stack.events(session.id);
    expect(await history(session.id)).toEqual({ proposals: [], next: null });

    // 1. Rejected.
    await alice.call("session.prompt", { sessionId: session.id, text: "one" });
    const rejected = await awaiting(events, TITLES[0]!);
    ids.rejected = rejected.proposalId;
    await alice.call("plans.resolve", {
      proposalId: rejected.proposalId,
      sessionId: session.id,
      turnId: rejected.turnId,
      toolCallId: rejected.toolCallId,
      action: "reject",
    });

    // 2. Interrupted: the host is killed while the plan waits, and the fence ends the wait.
    const { turnId: secondTurn } = await promptWhenIdle(session.id, "two");
    const interrupted = await awaiting(events, TITLES[1]!);
    ids.interrupted = interrupted.proposalId;
    await eventually(
      async () =>
        (
          await stack.db.pool.query("SELECT 1 FROM tool_calls WHERE turn_id = $1 AND tool = 'ExitPlanMode'", [
            secondTurn,
          ])
        ).rowCount,
    );
    await stack.host!.kill();
    await stack.startHost();
    await events.waitFor(
      (e) => isPlanChanged(e) && e.action === "interrupted" && e.proposal?.proposalId === ids.interrupted,
      30_000,
    );

    // 3. Expired: the host clock passes the 30-minute deadline (the host is not restarted after
    // this, so later plans are created later on the same clock).
    await promptWhenIdle(session.id, "three");
    const expired = await awaiting(events, TITLES[2]!);
    ids.expired = expired.proposalId;
    await stack.hook("clock.advance", { ms: 30 * 60 * 1000 + 1000 });
    await events.waitFor(
      (e) => isPlanChanged(e) && e.action === "expired" && e.proposal?.proposalId === ids.expired,
      30_000,
    );

    // 4. Approved, and its execution completes.
    await promptWhenIdle(session.id, "four");
    const approved = await awaiting(events, TITLES[3]!);
    ids.approved = approved.proposalId;
    await approveProposal(stack, approved, "accept-edits");
    await eventually(
      async () =>
        (await alice.call("plans.get", { proposalId: ids.approved! })).executionState === "completed",
      30_000,
      "execution completed",
    );

    // 5. Pending: back to Plan, a new plan waits for approval.
    await eventually(
      () => alice.call("session.configure", { sessionId: session.id, mode: "plan" }),
      20_000,
      "back to Plan",
    );
    await promptWhenIdle(session.id, "five");
    ids.pending = (await awaiting(events, TITLES[4]!)).proposalId;
    events.stop();

    const page = await history(session.id);
    expect(page.next).toBeNull();
    expect(page.proposals.map((p) => [p.title, p.status, p.errorCode])).toEqual([
      ["Pending plan", "pending", null],
      ["Approved plan", "approved", null],
      ["Expired plan", "expired", "PLAN_APPROVAL_TIMEOUT"],
      ["Interrupted plan", "interrupted", "PLAN_APPROVAL_INTERRUPTED"],
      ["Rejected plan", "rejected", null],
    ]);
    expect(page.proposals.map((p) => p.proposalId)).toEqual([
      ids.pending,
      ids.approved,
      ids.expired,
      ids.interrupted,
      ids.rejected,
    ]);
    expect(page.proposals[1]).toMatchObject({
      action: "approve",
      targetPermissionMode: "accept-edits",
      executionState: "completed",
    });
    // Newest first by createdAt; each view is what plans.get returns for it.
    const created = page.proposals.map((p) => Date.parse(p.createdAt));
    expect([...created].sort((a, b) => b - a)).toEqual(created);
    for (const p of page.proposals)
      expect(await alice.call("plans.get", { proposalId: p.proposalId })).toEqual(p);
    // The rows agree (status and code as stored).
    expect(
      await rows(
        stack,
        "SELECT id, status, error_code FROM plan_approvals WHERE session_id = $1 ORDER BY created_at DESC",
        [session.id],
      ),
    ).toEqual(page.proposals.map((p) => ({ id: p.proposalId, status: p.status, error_code: p.errorCode })));
    // The approver reads the same history.
    expect(await history(session.id, {}, "carol")).toEqual(page);
  });

  it("pages with the cursor without gaps or repeats", async () => {
    const all = (await history(session.id)).proposals.map((p) => p.proposalId);
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let before: string | null = null;
      let pages = 0;
      do {
        const page: ProposalHistoryPage = await history(session.id, {
          limit,
          ...(before !== null ? { before } : {}),
        });
        expect(page.proposals.length).toBeLessThanOrEqual(limit);
        seen.push(...page.proposals.map((p) => p.proposalId));
        before = page.next;
        pages++;
      } while (before !== null && pages < 10);
      expect(seen, `limit ${limit}`).toEqual(all);
      expect(pages).toBe(Math.ceil(all.length / limit));
    }
  });

  it("refuses anyone who may not read the session, an unknown session and malformed params", async () => {
    expect(await refusalCode(history(session.id, {}, "bob"))).toBe("FORBIDDEN");
    expect(await refusalCode(history(session.id, {}, "mallory"))).toBe("FORBIDDEN");
    expect(await refusalCode(history("sess_nope"))).toBe("SESSION_NOT_FOUND");
    expect(await refusalCode(history(session.id, { limit: 0 }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(history(session.id, { limit: 201 }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(history(session.id, { before: "not-a-cursor" }))).toBe("INVALID_PARAMS");
    expect(await refusalCode(stack.client("alice").raw("plans.history", {}))).toBe("INVALID_PARAMS");
  });

  it("pihost plans history says interrupted and expired plainly; --json is the host's result", async () => {
    const r = await pihost(stack, ["plans", "history", "--session", session.id]);
    expect(r).toMatchObject({ code: 0, stderr: "" });
    const lines = r.stdout.split("\n");
    const statusLine = (id: string) => lines.find((l) => l.startsWith(`plan ${id}: `));
    expect(statusLine(ids.interrupted!)).toBe(
      `plan ${ids.interrupted}: interrupted (PLAN_APPROVAL_INTERRUPTED): the host restarted (or the session was aborted) while the plan waited for approval; nothing was approved; submit the plan again`,
    );
    expect(statusLine(ids.expired!)).toMatch(
      /^plan \S+: expired \(PLAN_APPROVAL_TIMEOUT\): the approval deadline \S+ passed; nothing was approved; submit the plan again$/,
    );
    expect(statusLine(ids.approved!)).toMatch(
      /^plan \S+: approved \(permission mode accept-edits\); execution \S+ completed$/,
    );
    expect(statusLine(ids.rejected!)).toBe(
      `plan ${ids.rejected}: rejected: nothing ran; the session stayed in Plan`,
    );
    expect(statusLine(ids.pending!)).toMatch(/^plan \S+: pending: awaiting approval until \S+$/);
    expect(r.stdout).toContain(`approve: pihost plans approve ${ids.pending} --mode MODE`);
    // Newest first, as the host listed them.
    expect(lines.filter((l) => /^plan \S+: /.test(l)).map((l) => l.split(":")[0])).toEqual(
      [ids.pending, ids.approved, ids.expired, ids.interrupted, ids.rejected].map((id) => `plan ${id}`),
    );

    const json = await pihost(stack, ["--json", "plans", "history", "--session", session.id]);
    expect(json.code).toBe(0);
    expect(json.stdout.trim().split("\n")).toHaveLength(1);
    expect(jsonOut(json)).toEqual(await history(session.id));

    // Paged: the human output names the command for the older page; following it continues.
    const first = await pihost(stack, ["plans", "history", "--session", session.id, "--limit", "3"]);
    expect(first.code).toBe(0);
    const more = /^older plans: pihost plans history --session (\S+) --limit 3 --before (\S+)$/m.exec(
      first.stdout,
    );
    expect(more?.[1]).toBe(session.id);
    const second = await pihost(stack, [
      "--json",
      "plans",
      "history",
      "--session",
      session.id,
      "--limit",
      "3",
      "--before",
      more![2]!,
    ]);
    expect(jsonOut(second)).toEqual({
      proposals: (await history(session.id)).proposals.slice(3),
      next: null,
    });
  });

  it("pihost plans get shows one plan of any status; another person's is FORBIDDEN (exit 1)", async () => {
    const r = await pihost(stack, ["plans", "get", ids.interrupted!]);
    expect(r.code).toBe(0);
    expect(r.stdout.split("\n")[0]).toBe(
      `plan ${ids.interrupted}: interrupted (PLAN_APPROVAL_INTERRUPTED): the host restarted (or the session was aborted) while the plan waited for approval; nothing was approved; submit the plan again`,
    );
    expect(r.stdout).toContain("  title:    Interrupted plan");
    const expired = await pihost(stack, ["plans", "get", ids.expired!], "carol");
    expect(expired.code).toBe(0);
    expect(expired.stdout.split("\n")[0]).toMatch(
      /: expired \(PLAN_APPROVAL_TIMEOUT\): the approval deadline /,
    );

    const json = await pihost(stack, ["--json", "plans", "get", ids.approved!]);
    expect(json.code).toBe(0);
    expect(jsonOut(json)).toEqual(
      await stack.client("alice").call("plans.get", { proposalId: ids.approved! }),
    );

    const bob = await pihost(stack, ["plans", "get", ids.interrupted!], "bob");
    expect(bob).toMatchObject({ code: 1, stdout: "" });
    expect(bob.stderr).toMatch(/^error FORBIDDEN: /);
    const bobJson = await pihost(stack, ["--json", "plans", "get", ids.interrupted!], "bob");
    expect(bobJson.code).toBe(1);
    expect(jsonError(bobJson).code).toBe("FORBIDDEN");
    const bobHistory = await pihost(stack, ["plans", "history", "--session", session.id], "bob");
    expect(bobHistory).toMatchObject({ code: 1, stdout: "" });
    expect(bobHistory.stderr).toMatch(/^error FORBIDDEN: /);

    const missing = await pihost(stack, ["plans", "get", "plan_nope"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error PLAN_NOT_FOUND: /);
  });

  it("exit codes: 2 for a wrong command line (nothing sent), 1 for a cursor the host refuses", async () => {
    for (const args of [
      ["plans", "history"],
      ["plans", "history", "--session", session.id, "--limit", "0"],
      ["plans", "history", "--session", session.id, "--limit", "201"],
      ["plans", "history", "--session", session.id, "--limit", "2x"],
      ["plans", "get"],
    ]) {
      const r = await pihost(stack, args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toMatch(/^error USAGE: /);
    }
    const bad = await pihost(stack, ["plans", "history", "--session", session.id, "--before", "nope"]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error INVALID_PARAMS: /);
    const none = await pihost(stack, ["plans", "history", "--session", "sess_nope"]);
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^error SESSION_NOT_FOUND: /);
  });
});

describe("plans.history against the plan store alone", () => {
  let tdb: TestDatabase;
  let db: Db;
  let dir: string;

  useStack("history_store", {
    async setup(s) {
      tdb = s.db;
      dir = s.dir;
      await migrateUp({ databaseUrl: tdb.url });
      db = createDb(tdb.url, { max: 4 });
      return () => db.end();
    },
  });

  it("expires a pending row past its deadline on read, and pages in microsecond order by a keyset", async () => {
    const clock = createClock();
    const stores = planStores(db, dir, clock);
    const { plans } = stores;
    const { session, proposal } = await pendingProposal(stores, "ws", {
      toolCallId: "exit-1",
      title: "Slow",
      markdown: "# slow\n",
    });
    expect((await plans.history(session.id, {})).proposals.map((p) => p.status)).toEqual(["pending"]);

    // Past the deadline the read itself expires the row, as plans.pending does (once).
    clock.advance(30 * 60_000 + 1);
    const [expired] = (await plans.history(session.id, {})).proposals;
    expect(expired).toMatchObject({
      proposalId: proposal.proposalId,
      status: "expired",
      errorCode: "PLAN_APPROVAL_TIMEOUT",
    });
    await plans.history(session.id, {});
    const q = async (sql: string) => (await db.query(sql, [session.id])).rows;
    expect(await q("SELECT status, error_code FROM turns WHERE session_id = $1")).toEqual([
      { status: "aborted", error_code: "PLAN_APPROVAL_TIMEOUT" },
    ]);
    expect(await q("SELECT action FROM audit_log WHERE session_id = $1 AND action = 'plan.expire'")).toEqual([
      { action: "plan.expire" },
    ]);

    // Rows a microsecond apart (one JS millisecond) and rows with the same created_at: newest first,
    // then by id; every page continues exactly where the last ended.
    const copy = (id: string, at: string) =>
      db.query(
        `INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
           artifact_path, artifact_sha256, artifact_size, status, created_at, deadline, resolved_at, version)
         SELECT $2, 'req-' || $2, session_id, turn_id, 'call-' || $2, $2, question, markdown,
           '.pi/plan/' || $2 || '.md', artifact_sha256, artifact_size, 'rejected', $3::timestamptz,
           $3::timestamptz + interval '30 minutes', $3::timestamptz, 1
           FROM plan_approvals WHERE id = $1`,
        [proposal.proposalId, id, at],
      );
    await copy("plan_a", "2030-01-01T00:00:00.000001Z");
    await copy("plan_b", "2030-01-01T00:00:00.000001Z");
    await copy("plan_c", "2030-01-01T00:00:00.000001Z");
    // A microsecond later, with the smallest id: only the microseconds put it first.
    await copy("plan_0", "2030-01-01T00:00:00.000002Z");
    const order = ["plan_0", "plan_c", "plan_b", "plan_a", proposal.proposalId];
    expect((await plans.history(session.id, {})).proposals.map((p) => p.proposalId)).toEqual(order);

    const p1 = await plans.history(session.id, { limit: 2 });
    expect(p1.proposals.map((p) => p.proposalId)).toEqual(["plan_0", "plan_c"]);
    expect(p1.next).toMatch(/^[0-9]+\.plan_c$/);
    // A newer plan arriving between pages shifts nothing.
    await copy("plan_f", "2031-01-01T00:00:00.000000Z");
    const p2 = await plans.history(session.id, { limit: 2, before: p1.next! });
    expect(p2.proposals.map((p) => p.proposalId)).toEqual(["plan_b", "plan_a"]);
    const p3 = await plans.history(session.id, { limit: 2, before: p2.next! });
    expect(p3).toEqual({
      proposals: [expect.objectContaining({ proposalId: proposal.proposalId })],
      next: null,
    });
    expect((await plans.history(session.id, { limit: 1 })).proposals[0]?.proposalId).toBe("plan_f");
  });
});
