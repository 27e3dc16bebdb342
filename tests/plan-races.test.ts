// Race on one proposal (docs/architecture.md "Plans"): 20 concurrent approve/reject requests make exactly
// one transition; every other request gets the recorded result or a stable refusal, and there is at
// most one execution (exactly one when approve won), one execution turn in the model log and one
// resolution audit row. Run twice: over NATS against the real host (owner and approver, mixed
// actions), and against the plan store directly (20 concurrent transactions, no session actor in
// between), so the database guard holds by itself. Which action wins a mixed race is up to the race
// (every assertion below holds for either winner); a third race of approves only always has an
// approve winner, so the one-execution checks run on every run.
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createDb, type Db } from "../services/host/store/db.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import type { ResolveOutcome } from "../services/host/store/plan-store.ts";
import { AppError } from "../services/protocol/app-error.ts";
import type { ProposalView } from "../services/protocol/schemas.ts";
import {
  approvalRow,
  callsOf,
  exitPlanStep,
  newPlanSession,
  rows,
  submitted,
  turnEnded,
  writeStep,
} from "./support/plans.ts";
import { pendingProposal, planStores } from "./support/plan-store.ts";
import { useStack } from "./support/stack-fixture.ts";
import type { TestDatabase } from "./support/test-db.ts";
import { refusalCode } from "./support/worker-double.ts";
import { unwrap } from "../services/protocol/result.ts";

const RACERS = 20;
const LOSING_CODES = ["PLAN_ALREADY_RESOLVED", "PLAN_APPROVAL_CONFLICT"];

type Action = "approve" | "reject";
interface Racer {
  principal: "alice" | "bob";
  action: Action;
}

/**
 * 20 requests from the owner and an approver: approve (accept-edits) and reject alternating, starting
 * with `mix`; or, for "approves", approve only, so the winner is known to be an approve and 20
 * requests that could each create an execution race for it.
 */
type Mix = Action | "approves";
function racers(mix: Mix): Racer[] {
  const first: Action = mix === "reject" ? "reject" : "approve";
  const other: Action = mix === "approve" ? "reject" : "approve";
  return Array.from({ length: RACERS }, (_, i) => ({
    principal: i % 4 < 2 ? "alice" : "bob",
    action: i % 2 === 0 ? first : other,
  }));
}

function paramsOf(p: ProposalView, action: Action) {
  return {
    proposalId: p.proposalId,
    sessionId: p.sessionId,
    turnId: p.turnId,
    toolCallId: p.toolCallId,
    action,
    ...(action === "approve" ? { targetPermissionMode: "accept-edits" } : {}),
  };
}

describe("20 concurrent resolves over NATS (real host, owner and approver)", () => {
  const stack = useStack("races", { host: true, worker: true });

  it("one transition per proposal; the rest get the recorded result or a refusal; one execution runs once", async () => {
    // Three proposals: the mix starting with approve, the mix starting with reject, approves only.
    const script = [exitPlanStep("Racy plan"), writeStep("executed.txt"), { text: "done" }];
    const made = await Promise.all(
      (["approve", "reject", "approves"] as const).map(async (first) => {
        const { ws, session } = await newPlanSession(stack, `race-${first}`, script, ["bob"]);
        const events = stack.events(session.id);
        const { turnId } = await stack
          .client("alice")
          .call("session.prompt", { sessionId: session.id, text: "plan" });
        return { first, ws, session, events, planTurn: turnId, proposal: await submitted(events) };
      }),
    );
    // Hold the worker: right after the race the execution (if any) is still queued.
    await stack.worker!.stop();

    const results = [];
    for (const m of made) {
      const replies = await Promise.allSettled(
        racers(m.first).map((r) =>
          stack.client(r.principal).call("plans.resolve", paramsOf(m.proposal, r.action)),
        ),
      );
      const row = await approvalRow(stack, m.proposal.proposalId);
      expect(m.first === "approves" ? ["approved"] : ["approved", "rejected"]).toContain(row.status);
      const winner: Action = row.status === "approved" ? "approve" : "reject";

      // Every reply is the winner's result or a refusal; a request for the losing action never succeeds.
      const sent = racers(m.first);
      let successes = 0;
      replies.forEach((reply, i) => {
        if (reply.status === "fulfilled") {
          successes++;
          expect(sent[i]!.action).toBe(winner);
          expect(reply.value).toMatchObject({
            status: row.status,
            executionId: row.execution_id,
            version: 1,
          });
        } else {
          expect(reply.reason).toBeInstanceOf(AppError);
          expect(LOSING_CODES).toContain((reply.reason as AppError).code);
        }
      });
      expect(successes).toBeGreaterThanOrEqual(1);
      const tally: Record<string, number> = {};
      for (const reply of replies) {
        const k = reply.status === "fulfilled" ? "ok" : (reply.reason as AppError).code;
        tally[k] = (tally[k] ?? 0) + 1;
      }
      results.push({ ...m, winner, row, tally });
      // PLAN_APPROVAL_CONFLICT is retriable: retried now, it gets the recorded result (same action)
      // or PLAN_ALREADY_RESOLVED (the other one).
      for (const [i, reply] of replies.entries()) {
        if (reply.status !== "rejected" || (reply.reason as AppError).code !== "PLAN_APPROVAL_CONFLICT")
          continue;
        const again = stack
          .client(sent[i]!.principal)
          .call("plans.resolve", paramsOf(m.proposal, sent[i]!.action));
        if (sent[i]!.action === winner)
          expect(await again).toMatchObject({ status: row.status, executionId: row.execution_id });
        else expect(await refusalCode(again)).toBe("PLAN_ALREADY_RESOLVED");
      }

      // Exactly one transition: one version bump, one resolution audit row, at most one execution.
      expect(row.version).toBe(1);
      const audit = await rows(
        stack,
        `SELECT action, principal FROM audit_log WHERE action IN ('plan.approve', 'plan.reject') AND details->>'proposalId' = $1`,
        [m.proposal.proposalId],
      );
      expect(audit).toHaveLength(1);
      expect(audit[0]!.action).toBe(`plan.${winner}`);
      const execTurns = await rows<{ id: string; status: string }>(
        stack,
        "SELECT id, status FROM turns WHERE session_id = $1 AND kind = 'execution'",
        [m.session.id],
      );
      const view = await stack.client("alice").call("session.get", { sessionId: m.session.id });
      if (winner === "approve") {
        expect(row.execution_id).toMatch(/^exe_/);
        const ids = new Set(replies.flatMap((x) => (x.status === "fulfilled" ? [x.value.executionId] : [])));
        expect([...ids]).toEqual([row.execution_id]);
        expect(
          await rows(
            stack,
            "SELECT count(DISTINCT execution_id)::int AS n FROM plan_approvals WHERE session_id = $1 AND execution_id IS NOT NULL",
            [m.session.id],
          ),
        ).toEqual([{ n: 1 }]);
        expect(row.execution_state).toBe("queued");
        expect(execTurns).toEqual([{ id: row.execution_turn_id, status: "running" }]);
        expect(view).toMatchObject({ mode: "agent", permissionMode: "accept-edits" });
      } else {
        expect(row).toMatchObject({ execution_id: null, execution_state: null, execution_turn_id: null });
        expect(execTurns).toEqual([]);
        expect(view).toMatchObject({ mode: "plan", planningState: "planning", activeTurnId: null });
      }
      const planTurn = await rows(stack, "SELECT status FROM turns WHERE id = $1", [m.planTurn]);
      expect(planTurn).toEqual([{ status: "completed" }]);
    }
    console.info(
      `NATS race winners: ${results.map((r) => `${r.first} -> ${r.winner} ${JSON.stringify(r.tally)}`).join(", ")}`,
    );

    // A worker comes back: an approved execution runs exactly once, a rejected plan runs nothing.
    await stack.startWorker();
    for (const r of results) {
      if (r.winner === "approve") await turnEnded(r.events, r.row.execution_turn_id!, 30_000);
    }
    // A rejected plan's session takes a new (Plan) prompt; its end shows the worker took every offer.
    const nextTurn = new Map<string, string>();
    for (const r of results) {
      if (r.winner === "reject") {
        const { turnId } = await stack
          .client("alice")
          .call("session.prompt", { sessionId: r.session.id, text: "next" });
        await turnEnded(r.events, turnId);
        nextTurn.set(r.session.id, turnId);
      }
    }
    for (const r of results) {
      const turnsCalled = callsOf(stack, r.session.id).map((c) => c.turnId);
      const count = async (sql: string) => (await rows<{ n: number }>(stack, sql, [r.session.id]))[0]!.n;
      if (r.winner === "approve") {
        const exec = r.row.execution_turn_id!;
        expect(turnsCalled).toEqual([r.planTurn, exec, exec]);
        expect(await approvalRow(stack, r.proposal.proposalId)).toMatchObject({
          status: "approved",
          execution_state: "completed",
          execution_id: r.row.execution_id,
        });
        expect(
          await count("SELECT count(*)::int AS n FROM tool_calls WHERE session_id = $1 AND tool = 'Write'"),
        ).toBe(1);
        expect(
          await count(
            "SELECT count(*)::int AS n FROM audit_log WHERE action = 'plan.execution.start' AND session_id = $1",
          ),
        ).toBe(1);
        expect(existsSync(path.join(r.ws, "executed.txt"))).toBe(true);
      } else {
        // Nothing executed: the next prompt is a new Plan turn (its Write is refused in Plan).
        const next = nextTurn.get(r.session.id)!;
        expect(turnsCalled).toEqual([r.planTurn, next, next]);
        expect(
          await count("SELECT count(*)::int AS n FROM turns WHERE session_id = $1 AND kind = 'execution'"),
        ).toBe(0);
        expect(existsSync(path.join(r.ws, "executed.txt"))).toBe(false);
      }
      r.events.stop();
    }
  });
});

describe("20 concurrent resolves against the plan store (no actor in between)", () => {
  let tdb: TestDatabase;
  let db: Db;
  let dir: string;

  useStack("races_store", {
    async setup(s) {
      tdb = s.db;
      dir = s.dir;
      await migrateUp({ databaseUrl: tdb.url });
      db = createDb(tdb.url, { max: RACERS + 2 });
      return () => db.end();
    },
  });

  it("the row lock and version check alone allow exactly one transition per proposal", async () => {
    const stores = planStores(db, dir);
    const { plans } = stores;
    const winners: string[] = [];
    // Several rounds (fresh sessions) so both interleavings of the mix get raced.
    for (let round = 0; round < 6; round++) {
      const first: Mix = (["approve", "reject", "approves"] as const)[round % 3]!;
      const { session, turnId, proposal } = await pendingProposal(stores, `ws-${round}`, {
        toolCallId: `exit-${round}`,
        title: `Store race ${round}`,
        markdown: `# round ${round}\n`,
        approvers: ["bob"],
      });

      const sent = racers(first);
      const settled = await Promise.allSettled(
        // A refusal is answered as a value; as its AppError here, beside any other failure.
        sent.map(async (r) =>
          unwrap(await plans.resolve(r.principal, paramsOf(proposal, r.action), { readOnly: false })),
        ),
      );
      const outcomes = settled.map((s) => (s.status === "fulfilled" ? s.value : s.reason)) as Array<
        ResolveOutcome | AppError
      >;
      const fresh = outcomes.filter(
        (o): o is Exclude<ResolveOutcome, { kind: "recorded" }> =>
          !(o instanceof Error) && (o.kind === "approved" || o.kind === "rejected"),
      );
      expect(fresh).toHaveLength(1);
      const won = fresh[0]!;
      const winner: Action = won.kind === "approved" ? "approve" : "reject";
      winners.push(`${first} -> ${winner}`);
      outcomes.forEach((o, i) => {
        if (o === won) return;
        if (o instanceof Error) {
          // Anything but a typed refusal (a deadlock, a unique violation, a bug) fails here.
          expect(o).toBeInstanceOf(AppError);
          expect((o as AppError).code).toBe("PLAN_ALREADY_RESOLVED");
          expect(sent[i]!.action).not.toBe(winner);
        } else {
          expect(o.kind).toBe("recorded");
          expect(sent[i]!.action).toBe(winner);
          expect(o.proposal).toMatchObject({
            status: won.proposal.status,
            executionId: won.proposal.executionId,
            version: 1,
          });
        }
      });

      const { rows: r } = await db.query(
        "SELECT status, version, execution_id, execution_state, execution_turn_id FROM plan_approvals WHERE id = $1",
        [proposal.proposalId],
      );
      expect(r[0]).toMatchObject({ status: won.proposal.status, version: 1 });
      const execs = await db.query(
        "SELECT count(DISTINCT execution_id)::int AS ids FROM plan_approvals WHERE session_id = $1 AND execution_id IS NOT NULL",
        [session.id],
      );
      const execTurns = await db.query(
        "SELECT count(*)::int AS n FROM turns WHERE session_id = $1 AND kind = 'execution'",
        [session.id],
      );
      const audit = await db.query(
        "SELECT action FROM audit_log WHERE action IN ('plan.approve', 'plan.reject') AND details->>'proposalId' = $1",
        [proposal.proposalId],
      );
      const s = await db.query("SELECT mode, permission_mode FROM sessions WHERE id = $1", [session.id]);
      expect(audit.rows).toEqual([{ action: `plan.${winner}` }]);
      if (winner === "approve") {
        expect(won.kind === "approved" && won.executionTurnId).toBe(r[0].execution_turn_id);
        expect(r[0].execution_state).toBe("queued");
        expect(execs.rows[0].ids).toBe(1);
        expect(execTurns.rows[0].n).toBe(1);
        expect(s.rows[0]).toEqual({ mode: "agent", permission_mode: "accept-edits" });
      } else {
        expect(execs.rows[0].ids).toBe(0);
        expect(execTurns.rows[0].n).toBe(0);
        expect(s.rows[0]).toEqual({ mode: "plan", permission_mode: "inherit" });
      }
      const planTurn = await db.query("SELECT status FROM turns WHERE id = $1", [turnId]);
      expect(planTurn.rows[0].status).toBe("completed");
    }
    console.info(`store race winners: ${winners.join(", ")}`);
  });
});
