// A lost database connection is a retriable refusal, never a crash (issue #12 clause 3), written as
// the fault: the host's Postgres backends are terminated a few milliseconds into a session.create
// or an approve, again and again. The host stays up (same process); every reply is a result or the
// retriable DATABASE_UNAVAILABLE; an approve's reply tells the truth about its row (approved <=> the
// reply says approved, and the session then is in Agent); host.status says whether the database is
// reachable.
import { describe, expect, it } from "vitest";
import { AppError } from "../services/protocol/app-error.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { useBackendTerminator } from "./support/db-faults.ts";
import { promptAndClaim } from "./support/worker-double.ts";

const stack = useStack("dblost", { host: true, extra: { PI_TURN_LEASE_MS: "600000" } });
/** Terminates every backend of the host (not the test's own pool) after `ms`. */
const terminateHostBackends = useBackendTerminator(stack);

/** The reply: ok, or the code it was refused with (anything but an AppError fails the test). */
async function outcome<T>(
  p: Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; code: string; details: unknown }> {
  try {
    return { ok: true, value: await p };
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    return { ok: false, code: err.code, details: err.details };
  }
}

describe("the host's database connections terminated mid-request", () => {
  it("session.create and approve: a result or DATABASE_UNAVAILABLE each time, the truth about every approval, the host up", async () => {
    const pid = stack.host!.child.pid;
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("dblost");
    const project = await alice.call("projects.create", { name: "d", workspaceRoot: ws });

    const codes = new Map<string, number>();
    const count = (c: string) => codes.set(c, (codes.get(c) ?? 0) + 1);
    let terminated = 0;
    for (let i = 0; i < 20; i++) {
      const [r, n] = await Promise.all([
        outcome(alice.call("session.create", { projectId: project.id, mode: "plan" })),
        terminateHostBackends(i % 5),
      ]);
      terminated += n;
      count(r.ok ? "ok" : r.code);
    }

    // Approvals: each raced by a termination; the reply must match the row.
    for (let i = 0; i < 12; i++) {
      const session = await eventually(() =>
        alice.call("session.create", { projectId: project.id, mode: "plan" }),
      );
      const a = await eventually(() => promptAndClaim(stack, session.id));
      const submit = await eventually(() =>
        stack.agentClient.call("tools.execute", {
          sessionId: session.id,
          turnId: a.turnId,
          token: a.token,
          toolCallId: "exit-1",
          tool: "ExitPlanMode",
          args: { title: `P${i}`, markdown: `# Plan ${i}\n`, question: "ok?" },
          batch: [{ toolCallId: "exit-1", tool: "ExitPlanMode" }],
        }),
      );
      expect(submit.isError).toBe(false);
      const [proposal] = (await eventually(() => alice.call("plans.pending", { sessionId: session.id })))
        .proposals;
      const [r, n] = await Promise.all([
        outcome(
          alice.call("plans.resolve", {
            proposalId: proposal!.proposalId,
            sessionId: session.id,
            turnId: proposal!.turnId,
            toolCallId: proposal!.toolCallId,
            action: "approve",
            targetPermissionMode: "auto",
          }),
        ),
        terminateHostBackends([0, 2, 4, 6, 8, 12][i % 6]!),
      ]);
      terminated += n;
      count(r.ok ? "approve-ok" : `approve-${r.code}`);
      const row = await eventually(async () => {
        const q = await stack.db.pool.query("SELECT status FROM plan_approvals WHERE id = $1", [
          proposal!.proposalId,
        ]);
        return q.rows[0] as { status: string };
      });
      const view = await eventually(() => alice.call("session.get", { sessionId: session.id }));
      if (r.ok) {
        expect(row.status).toBe("approved");
        expect(view.mode).toBe("agent");
      } else {
        expect(r.code).toBe("DATABASE_UNAVAILABLE");
        expect(row.status).toBe("pending");
        expect(view).toMatchObject({ mode: "plan", planningState: "awaiting_approval" });
      }
    }

    expect(
      [...codes.keys()].every((c) =>
        ["ok", "DATABASE_UNAVAILABLE", "approve-ok", "approve-DATABASE_UNAVAILABLE"].includes(c),
      ),
    ).toBe(true);
    expect(terminated).toBeGreaterThan(0);
    expect(stack.host!.child.pid).toBe(pid);
    expect(stack.host!.child.exitCode).toBeNull();
    const status = await eventually(() => alice.call("host.status"));
    expect(status.reachable).toEqual({ database: true, nats: true });
    console.log(`outcomes: ${JSON.stringify(Object.fromEntries(codes))}; backends terminated: ${terminated}`);
  }, 180_000);
});
