// An approved execution is claimed once, written as the race (issue #25 item 5): twenty workers
// claim the same queued execution at once against the plan store, with no actor in between. The
// claim is one statement (the row queued -> running by version, its audit row, and turn.started,
// plan.changed and turn.claimed), so exactly one claim wins and commits all of it in one
// transaction; every other claim is PLAN_EXECUTION_STALE and writes nothing (fails when the write
// stops checking the row's state and version, or when its parts commit apart).
import { describe, expect, it } from "vitest";
import { createDb, type Db } from "../services/host/store/db.ts";
import { migrateUp } from "../services/host/store/migrate.ts";
import { unwrap } from "../services/protocol/result.ts";
import { pendingProposal, planStores } from "./support/plan-store.ts";
import { useStack } from "./support/stack-fixture.ts";

const CLAIMERS = 20;
const ROUNDS = 5;

describe(`${CLAIMERS} concurrent claims of one approved execution (the plan store alone)`, () => {
  let db: Db;
  let dir: string;

  useStack("claim_races", {
    async setup(s) {
      dir = s.dir;
      await migrateUp({ databaseUrl: s.db.url });
      db = createDb(s.db.url, { max: CLAIMERS + 2 });
      return () => db.end();
    },
  });

  it("exactly one goes queued -> running, with its audit row and its three events in the same transaction", async () => {
    const stores = planStores(db, dir);
    const { plans } = stores;
    for (let round = 0; round < ROUNDS; round++) {
      const { session, turnId, proposal } = await pendingProposal(stores, `ws-${round}`, {
        toolCallId: `exit-${round}`,
        title: `Claim race ${round}`,
        markdown: `# round ${round}\n`,
      });
      const approved = unwrap(
        await plans.resolve(
          "alice",
          {
            proposalId: proposal.proposalId,
            sessionId: session.id,
            turnId,
            toolCallId: `exit-${round}`,
            action: "approve",
            targetPermissionMode: "accept-edits",
          },
          { readOnly: false },
        ),
      );
      if (approved.kind !== "approved") throw new Error(`not approved: ${approved.kind}`);
      const execTurn = approved.executionTurnId;

      const outcomes = await Promise.all(
        Array.from({ length: CLAIMERS }, (_, i) => plans.claimExecution(execTurn, { workerId: `w${i}` })),
      );
      const won = outcomes.filter((o) => o.ok);
      expect(won).toHaveLength(1);
      expect(won[0]!.proposal).toMatchObject({
        executionState: "running",
        version: approved.proposal.version + 1,
      });
      for (const o of outcomes) if (!o.ok) expect(o.code).toBe("PLAN_EXECUTION_STALE");
      const winner = outcomes.findIndex((o) => o.ok);

      const row = await db.query(
        "SELECT execution_state, version, xmin::text AS x FROM plan_approvals WHERE id = $1",
        [proposal.proposalId],
      );
      expect(row.rows[0]).toMatchObject({
        execution_state: "running",
        version: approved.proposal.version + 1,
      });
      const audit = await db.query(
        "SELECT xmin::text AS x, details FROM audit_log WHERE action = 'plan.execution.start' AND session_id = $1",
        [session.id],
      );
      expect(audit.rows).toHaveLength(1);
      expect(audit.rows[0].details).toEqual({
        proposalId: proposal.proposalId,
        executionId: approved.proposal.executionId,
      });
      const events = await db.query(
        `SELECT type, body, xmin::text AS x FROM session_events
          WHERE session_id = $1 AND type IN ('turn.started', 'plan.changed', 'turn.claimed')
            AND seq > (SELECT max(seq) FROM session_events WHERE session_id = $1 AND type = 'session.changed')
          ORDER BY seq`,
        [session.id],
      );
      expect(events.rows.map((e) => [e.type, e.body])).toEqual([
        ["turn.started", { turnId: execTurn, kind: "execution" }],
        [
          "plan.changed",
          { state: "inactive", execution: { executionId: approved.proposal.executionId, state: "running" } },
        ],
        ["turn.claimed", { turnId: execTurn, workerId: `w${winner}` }],
      ]);
      // One transaction: the row, the audit row and every event carry the same xmin.
      const xmins = new Set([row.rows[0].x, audit.rows[0].x, ...events.rows.map((e) => e.x)]);
      expect(xmins.size).toBe(1);
    }
  });
});
