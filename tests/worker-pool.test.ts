// The worker pool (issue #16 clause 6), written as the fault: two worker processes serve one host;
// the one running a turn is SIGKILLed mid-turn. The host ends that turn TURN_LEASE_EXPIRED within a
// bounded delay (PI_TURN_LEASE_MS plus slack), the scripted model's call log shows no second call for
// it (never replayed), a turn parked behind a pending plan approval is unaffected (still pending,
// then approved and executed), and the next turn runs on the other worker. `workers.list` (and
// `pihost workers`) shows both workers and the turn one holds, to any principal.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { WorkerList } from "../services/protocol/schemas.ts";
import { jsonOut, pihost } from "./support/cli.ts";
import { useFakeOpenAIModels } from "./support/fake-providers.ts";
import {
  approvalRow,
  approveProposal,
  callsOf,
  exitPlanStep,
  newPlanSession,
  submitted,
  turnEnded,
} from "./support/plans.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";

const LEASE_MS = 2_000;
// The workers also serve a configured provider (local-openai/m1), so workers.list has one to show;
// the turns run on the scripted model, served by every worker and never listed.
const fake = useFakeOpenAIModels();
const stack = useStack("wpool", {
  host: true,
  extra: { PI_TURN_LEASE_MS: String(LEASE_MS), PI_TURN_HEARTBEAT_MS: "300", PI_MODELS_JSON: fake.file },
  async prepare() {
    await fake.start();
  },
});

const ran = (lines: string[], turnId: string) => lines.some((l) => l.includes(turnId));

describe("a pool of two workers", () => {
  it("a worker SIGKILLed mid-turn: TURN_LEASE_EXPIRED within the lease, never replayed, parked turns unaffected, the next turn on the other worker", async () => {
    const alice = stack.client("alice");
    const w1 = await stack.startWorker();
    const w2 = await stack.startWorker();
    const ids = [
      String((await w1.waitForEvent("worker.ready")).workerId),
      String((await w2.waitForEvent("worker.ready")).workerId),
    ];

    // A parked turn: a plan waits for approval.
    const plan = await newPlanSession(stack, `pool-plan-${Date.now()}`, [
      exitPlanStep("Pool"),
      { text: "executed" },
    ]);
    const planEvents = stack.events(plan.session.id);
    await alice.call("session.prompt", { sessionId: plan.session.id, text: "plan it" });
    const proposal = await submitted(planEvents);

    // A running turn: its model call waits for a file that appears only after the kill.
    const marker = path.join(stack.dir, `release-${Date.now()}`);
    const ws = stack.newWorkspace(`pool-${Date.now()}`);
    const project = await alice.call("projects.create", { name: "pool", workspaceRoot: ws });
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
      model: { provider: "scripted", model: "script", script: [{ waitForFile: marker, text: "released" }] },
    });
    const events = stack.events(session.id);
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "first",
    });
    await eventually(
      async () => callsOf(stack, session.id).some((c) => c.turnId === turnId),
      20_000,
      "the model call",
    );
    const [victim, survivor] = ran(w1.lines, turnId) ? [w1, w2] : [w2, w1];
    const victimId = ids[victim === w1 ? 0 : 1]!;
    const survivorId = ids[victim === w1 ? 1 : 0]!;

    // workers.list: both workers, what they serve, the turn the victim holds; the same for bob.
    const listed = await eventually(
      async () => {
        const r = await alice.call("workers.list", {});
        return r.workers.find((w) => w.workerId === victimId)?.turns === 1 ? r : null;
      },
      10_000,
      "the victim listed with its turn",
    );
    expect(listed.workers.map((w) => w.workerId).sort()).toEqual([...ids].sort());
    for (const w of listed.workers) {
      expect(w.serves).toEqual([{ provider: "local-openai", model: "m1" }]);
      expect(Number.isNaN(Date.parse(w.lastSeenAt))).toBe(false);
    }
    expect(listed.workers.find((w) => w.workerId === survivorId)?.turns).toBe(0);
    const asBob = await stack.client("bob").call("workers.list", {});
    expect(asBob.workers.map((w) => w.workerId).sort()).toEqual([...ids].sort());
    const cli = await pihost(stack, ["workers"], "bob");
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(new RegExp(`^worker ${victimId}  1 turn  last seen \\S+$`, "m"));
    expect(cli.stdout).toMatch(new RegExp(`^worker ${survivorId}  0 turns  last seen \\S+$`, "m"));
    expect(cli.stdout).toContain("  serves local-openai/m1\n");
    const cliJson = await pihost(stack, ["workers", "--json"], "alice");
    expect(cliJson.code).toBe(0);
    expect((jsonOut(cliJson) as WorkerList).workers).toHaveLength(2);

    // SIGKILL mid-turn: the owner ends the turn with TURN_LEASE_EXPIRED within the lease (plus slack).
    const killedAt = Date.now();
    await victim.kill();
    const ended = await turnEnded(events, turnId, LEASE_MS + 10_000);
    const delay = Date.now() - killedAt;
    console.log(`worker-pool: turn ended ${ended.code} ${delay} ms after the SIGKILL (lease ${LEASE_MS} ms)`);
    expect(ended).toMatchObject({ status: "aborted", code: "TURN_LEASE_EXPIRED" });
    expect(delay).toBeLessThan(LEASE_MS + 3_000);
    // Never replayed: the survivor never ran it, and the call log has exactly its one call.
    writeFileSync(marker, "go");
    await new Promise((r) => setTimeout(r, 1_000));
    expect(callsOf(stack, session.id).filter((c) => c.turnId === turnId)).toHaveLength(1);
    expect(ran(survivor.lines, turnId)).toBe(false);

    // The parked turn is unaffected: its approval is still pending, and is approved and executed.
    expect(await approvalRow(stack, proposal.proposalId)).toMatchObject({ status: "pending" });
    await approveProposal(stack, proposal, "auto");
    const execTurn = (await approvalRow(stack, proposal.proposalId)).execution_turn_id!;
    expect(await turnEnded(planEvents, execTurn, 30_000)).toMatchObject({ status: "completed" });
    expect(ran(survivor.lines, execTurn)).toBe(true);

    // The next turn of the session runs on the other worker.
    const next = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "second",
    });
    expect(await turnEnded(events, next.turnId, 30_000)).toMatchObject({ status: "completed" });
    expect(ran(survivor.lines, next.turnId)).toBe(true);
    // The killed worker is still listed until it is forgotten (90 s), holding no turn now.
    const afterKill = await alice.call("workers.list", {});
    expect(afterKill.workers.find((w) => w.workerId === victimId)?.turns ?? 0).toBe(0);

    await survivor.stop();
    events.stop();
    planEvents.stop();
  }, 120_000);
});
