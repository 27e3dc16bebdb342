// A write by a host for a session whose lease it does not hold (here: the lease names a newer
// incarnation than the writer's, as after a race with a takeover) is refused in Postgres: the request
// gets the retriable SESSION_LEASE_LOST, nothing is written, the actor is dropped (not degraded), and
// the refusing host records the refusal in the audit log with the lease's owner.
import { describe, expect, it } from "vitest";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const stack = useStack("leaselost", { host: true });

describe("a write for a session this host does not own", () => {
  it("is refused SESSION_LEASE_LOST, writes nothing, drops the actor and is audited by the refusing host", async () => {
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", {
      name: "lease",
      workspaceRoot: stack.newWorkspace("lease"),
    });
    const session = await alice.call("session.create", { projectId: project.id, mode: "plan" });
    await alice.call("session.get", { sessionId: session.id }); // its actor is alive now
    const q = (sql: string, p: unknown[] = []) => stack.db.pool.query(sql, p);
    const [lease] = (
      await q("SELECT host_id, incarnation, epoch FROM session_leases WHERE session_id = $1", [session.id])
    ).rows;
    await q("UPDATE session_leases SET incarnation = incarnation + 5 WHERE session_id = $1", [session.id]);

    const refused = alice.call("session.configure", { sessionId: session.id, mode: "agent" });
    expect(await refusalCode(refused)).toBe("SESSION_LEASE_LOST");
    const [row] = (await q("SELECT mode, version FROM sessions WHERE id = $1", [session.id])).rows;
    expect(row).toEqual({ mode: "plan", version: session.version });
    const audit = await eventually(
      async () =>
        (
          await q(
            "SELECT code, details FROM audit_log WHERE action = 'session.lease_lost' AND session_id = $1",
            [session.id],
          )
        ).rows[0],
      5_000,
    );
    expect(audit).toEqual({
      code: "SESSION_LEASE_LOST",
      details: { owner: lease.host_id, ownerIncarnation: lease.incarnation + 5, epoch: Number(lease.epoch) },
    });
    // Not degraded: once the lease is this host's again, the session is served.
    await q("UPDATE session_leases SET incarnation = $2 WHERE session_id = $1", [
      session.id,
      lease.incarnation,
    ]);
    const configured = await alice.call("session.configure", {
      sessionId: session.id,
      mode: "agent",
    });
    expect(configured.mode).toBe("agent");
  });
});
