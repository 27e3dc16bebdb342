// Several hosts, one team (issue #16 acceptance; docs/architecture.md "Several hosts"): three host
// processes and two agent workers on one Postgres and one NATS prefix.
// - SIGKILL a host while its sessions hold pending approvals and a running execution: after its
//   heartbeat stops for a lease, exactly its sessions are fenced and taken over by one host, while
//   another host's pending approval stays resolvable (resolved during the takeover).
// - A host paused with SIGSTOP past its lease and resumed commits nothing for the sessions it lost
//   and stops; the new owner serves them.
// - SIGTERM: another host serves the released sessions within a second.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ScriptStep } from "../services/protocol/values.ts";
import { approveProposal, exitPlanStep, newPlanSession, writeStep } from "./support/plans.ts";
import { hostEnv, type ManagedProcess, spawnTs, startWorker } from "./support/processes.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("hosts3", { timeoutMs: 120_000 });
const hosts = new Map<string, ManagedProcess>();
const workers: ManagedProcess[] = [];

beforeAll(async () => {
  await startHosts(["h1", "h2", "h3"]);
  workers.push(startWorker(stack.env), startWorker(stack.env));
  await Promise.all(workers.map((w) => w.waitForEvent("worker.ready")));
}, 90_000);

afterAll(async () => {
  await Promise.all([...workers, ...hosts.values()].map((p) => p.stop()));
});

async function startHosts(ids: string[]): Promise<void> {
  for (const id of ids)
    hosts.set(id, spawnTs("services/host/main.ts", { ...hostEnv(stack.env), PI_HOST_ID: id }));
  await Promise.all(ids.map((id) => hosts.get(id)!.waitForEvent("host.ready", 60_000)));
}

async function owner(sessionId: string): Promise<{ hostId: string; epoch: number }> {
  const r = await stack.db.pool.query("SELECT host_id, epoch FROM session_leases WHERE session_id = $1", [
    sessionId,
  ]);
  return { hostId: r.rows[0].host_id, epoch: Number(r.rows[0].epoch) };
}

const plan = async (id: string) => stack.client("alice").call("plans.get", { proposalId: id });

/** A Plan session whose prompt parks on a pending plan; the execution runs `after`. */
async function pendingPlan(name: string, after: ScriptStep[]) {
  const { session } = await newPlanSession(stack, name, [exitPlanStep(`${name} plan`), ...after]);
  const events = stack.events(session.id);
  await stack.client("alice").call("session.prompt", { sessionId: session.id, text: "plan" });
  const e = await events.waitFor(
    isEvent("plan.changed", (x) => x.state === "awaiting_approval"),
    30_000,
  );
  return { session, events, proposal: e.proposal! };
}

let made = 0;
/** Pending plans until every host named owns at least `n` of them. */
async function plansOn(ids: string[], n: number, after: ScriptStep[]) {
  const by = new Map<string, Array<Awaited<ReturnType<typeof pendingPlan>>>>(ids.map((id) => [id, []]));
  for (let i = 0; i < 40 && [...by.values()].some((l) => l.length < n); i++) {
    const p = await pendingPlan(`s${made++}`, after);
    by.get((await owner(p.session.id)).hostId)?.push(p);
  }
  return by;
}

const takeovers = (from: string) =>
  [...hosts.entries()].flatMap(([id, h]) =>
    h.lines
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          return null;
        }
      })
      .filter((e) => e?.event === "host.takeover" && e.deadHostId === from)
      .map(() => id),
  );

describe("three hosts, two workers", () => {
  it("SIGKILL of a host: exactly its sessions are fenced and taken over by one host; the others' approvals stay resolvable", async () => {
    const gate = `${stack.dir}/never`;
    const by = await plansOn(["h1", "h2"], 2, [{ waitForFile: gate, ...writeStep("x.txt") }]);
    const [running, waiting] = by.get("h1")!;
    const [other, other2] = by.get("h2")!;
    // One of h1's plans is approved: its execution runs (the model waits on a file nobody writes).
    await approveProposal(stack, running!.proposal, "accept-edits");
    await eventually(
      async () => (await plan(running!.proposal.proposalId)).executionState === "running",
      30_000,
    );
    const epochBefore = (await owner(waiting!.session.id)).epoch;

    await hosts.get("h1")!.kill();
    // During the takeover another host's approval is resolved (forwarded to its owner if need be).
    // A request the queue group handed to h1 as it died gets no reply: the client retries, and
    // approving again with the same mode returns the recorded result.
    const approved = await eventually(() => approveProposal(stack, other!.proposal, "accept-edits"), 30_000);
    expect(approved.status).toBe("approved");

    await eventually(async () => (await plan(waiting!.proposal.proposalId)).status === "interrupted", 20_000);
    expect(await plan(waiting!.proposal.proposalId)).toMatchObject({
      errorCode: "PLAN_APPROVAL_INTERRUPTED",
    });
    expect(await plan(running!.proposal.proposalId)).toMatchObject({ executionState: "interrupted" });
    // Exactly one host took h1 over, and h1's sessions now name it with the next epoch.
    await eventually(async () => takeovers("h1").length > 0, 10_000);
    const winners = takeovers("h1");
    expect(winners).toHaveLength(1);
    for (const s of [running!.session.id, waiting!.session.id])
      expect(await owner(s)).toEqual({ hostId: winners[0], epoch: epochBefore + 1 });
    // The other host's sessions were not touched: still its own, the second approval still pending.
    expect((await owner(other2!.session.id)).hostId).toBe("h2");
    expect((await plan(other2!.proposal.proposalId)).status).toBe("pending");
    // The taken-over session serves its next prompt on the new owner.
    await eventually(
      () => stack.client("alice").call("session.prompt", { sessionId: waiting!.session.id, text: "again" }),
      20_000,
    );
  });

  it("a host paused past its lease commits nothing for the sessions it lost once resumed, and stops", async () => {
    const by = await plansOn(["h2"], 1, [{ text: "x" }]);
    const [p] = by.get("h2")!;
    const h2 = hosts.get("h2")!;
    h2.child.kill("SIGSTOP");
    await eventually(async () => (await owner(p!.session.id)).hostId !== "h2", 20_000);
    // (Read from the rows: while h2 is paused NATS still hands it its share of the queue group's
    // requests, which time out and are retried by clients; the test does not depend on that.)
    const status = await stack.db.pool.query("SELECT status FROM plan_approvals WHERE id = $1", [
      p!.proposal.proposalId,
    ]);
    expect(status.rows[0].status).toBe("interrupted");
    const rowsBefore = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM turns WHERE session_id = $1",
      [p!.session.id],
    );
    h2.child.kill("SIGCONT");
    // It finds itself superseded (its heartbeat or its first write) and exits without serving.
    const code = await Promise.race([
      h2.exited,
      new Promise((r) => setTimeout(() => r("still running"), 15_000)),
    ]);
    expect(code).toBe(3);
    expect((await owner(p!.session.id)).hostId).not.toBe("h2");
    const rowsAfter = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM turns WHERE session_id = $1",
      [p!.session.id],
    );
    expect(rowsAfter.rows[0].n).toBe(rowsBefore.rows[0].n);
  });

  it("SIGTERM: the released sessions are served by another host within a second", async () => {
    // h1 was killed and h2 stopped itself: a host is added (a new id serves at once).
    await startHosts(["h4"]);
    const by = await plansOn(["h3"], 1, [{ text: "x" }]);
    const [p] = by.get("h3")!;
    expect((await owner(p!.session.id)).hostId).toBe("h3");
    await stack.client("alice").call("plans.resolve", {
      proposalId: p!.proposal.proposalId,
      sessionId: p!.session.id,
      turnId: p!.proposal.turnId,
      toolCallId: p!.proposal.toolCallId,
      version: p!.proposal.version,
      action: "reject",
    });
    const h3 = hosts.get("h3")!;
    await h3.stop();
    const stoppedAt = Date.now();
    await eventually(async () => (await owner(p!.session.id)).hostId !== "h3", 5_000);
    const served = await eventually(
      () => stack.client("alice").call("session.get", { sessionId: p!.session.id }),
      5_000,
    );
    expect(served.mode).toBe("plan");
    expect(Date.now() - stoppedAt).toBeLessThan(1_000 + 300);
  });
});
