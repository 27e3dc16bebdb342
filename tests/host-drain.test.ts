// The drain on SIGTERM (issue #16 clause 7), written as the fault: a person's raw NATS client sends
// a stream of requests (200 over 2 s, alice and bob) while the host is stopped with SIGTERM, with a
// worker's tool call in flight waiting for a permission and a plan approval pending. Every request
// gets a reply: a result, a refusal it asked for (bob: FORBIDDEN) or a retriable one
// (HOST_SHUTTING_DOWN from the moment the drain starts); none goes unanswered (a timeout is the
// failure). The request in flight is replied to, the stop fence ends the turn HOST_STOPPING and
// interrupts the approval, announced, and the host row says `stopped`. A request sent once the host
// has left gets NATS "no responders" (503): counted apart, told apart by the client.
import { NoRespondersError, TimeoutError } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { errorCodeInfo, type ErrorCode } from "../services/protocol/error-codes.ts";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import { rpcSubject } from "../services/protocol/subjects.ts";
import { approvalRow, exitPlanStep, newPlanSession, rows, submitted, turnEnded } from "./support/plans.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, promptAndClaim } from "./support/worker-double.ts";
import { isEvent } from "./support/events.ts";

// The worker double's turn must not lose its lease while the test runs.
const stack = useStack("drain", { host: true, extra: { PI_TURN_LEASE_MS: "600000" } });

type Outcome =
  | { kind: "result" }
  | { kind: "error"; code: string; retriable: boolean }
  | { kind: "no-responders" }
  | { kind: "lost"; why: string };

/** One request as a person's raw client sends it, and what came back. */
async function send(principal: string, method: string, params: unknown): Promise<Outcome> {
  try {
    const m = await stack.nc.request(rpcSubject(stack.env.prefix, principal, method), encodeJson(params), {
      timeout: 10_000,
    });
    const body = decodeJson(m.data) as { result?: unknown; error?: { code: string; retriable: boolean } };
    if (body.error) return { kind: "error", code: body.error.code, retriable: body.error.retriable };
    return { kind: "result" };
  } catch (err) {
    const cause = (err as { cause?: unknown }).cause;
    if (err instanceof NoRespondersError || cause instanceof NoRespondersError)
      return { kind: "no-responders" };
    if (err instanceof TimeoutError || cause instanceof TimeoutError) return { kind: "lost", why: "timeout" };
    return { kind: "lost", why: String(err) };
  }
}

const tally = (outcomes: Outcome[]) => {
  const t: Record<string, number> = {};
  for (const o of outcomes) {
    const key = o.kind === "error" ? `error ${o.code}` : o.kind;
    t[key] = (t[key] ?? 0) + 1;
  }
  return t;
};

describe("SIGTERM drains the host", () => {
  it("every request of a stream gets a reply, in-flight work is answered, the stop fence ends it and the row says stopped", async () => {
    const alice = stack.client("alice");
    // A plan approval waits for a person (a real worker parks the turn behind it, then leaves).
    const worker = await stack.startWorker();
    const plan = await newPlanSession(stack, `drain-plan-${Date.now()}`, [exitPlanStep("Drain")]);
    const planEvents = stack.events(plan.session.id);
    await alice.call("session.prompt", { sessionId: plan.session.id, text: "plan it" });
    const proposal = await submitted(planEvents);
    await worker.stop();

    // A worker's tool call is in flight: a Bash call waiting for alice's permission.
    const ws = stack.newWorkspace(`drain-${Date.now()}`);
    const project = await alice.call("projects.create", { name: "drain", workspaceRoot: ws });
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
      permissionMode: "ask",
    });
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    const inFlight = executeTool(stack, a, "b1", "Bash", { command: "true" }).then(
      () => ({ kind: "result" }) as Outcome,
      (err: { code?: string }) =>
        err.code
          ? ({
              kind: "error",
              code: err.code,
              retriable: errorCodeInfo[err.code as ErrorCode]?.retriable,
            } as Outcome)
          : ({ kind: "lost", why: String(err) } as Outcome),
    );
    await events.waitFor((e) => e.type === "permission.requested");

    // 200 requests over 2 s, alternating alice's reads and bob's read of alice's session; SIGTERM at 1 s.
    const kinds: Array<[string, string, unknown]> = [
      ["alice", "host.status", {}],
      ["alice", "session.get", { sessionId: session.id }],
      ["bob", "session.get", { sessionId: session.id }],
      ["alice", "session.list", {}],
    ];
    const sent: Array<Promise<Outcome & { i: number; who: string }>> = [];
    const host = stack.host!;
    let termAt = -1;
    for (let i = 0; i < 200; i++) {
      if (i === 100) {
        termAt = i;
        host.child.kill("SIGTERM");
      }
      const [who, method, params] = kinds[i % kinds.length]!;
      sent.push(send(who, method, params).then((o) => ({ ...o, i, who })));
      await new Promise((r) => setTimeout(r, 10));
    }
    const outcomes = await Promise.all(sent);
    expect(await host.exited).toBe(0);
    // Once the host has left, a request gets NATS "no responders" at once (503): retriable, counted apart.
    const after = await Promise.all(Array.from({ length: 10 }, () => send("alice", "host.status", {})));

    const counts = tally(outcomes);
    console.log(`drain: stream ${JSON.stringify(counts)}, after exit ${JSON.stringify(tally(after))}`);
    // None without a reply; every refusal is bob's FORBIDDEN or retriable.
    expect(outcomes.filter((o) => o.kind === "lost")).toEqual([]);
    expect(
      outcomes.filter(
        (o) => o.kind === "error" && !o.retriable && !(o.who === "bob" && o.code === "FORBIDDEN"),
      ),
    ).toEqual([]);
    // Bob never reads alice's session; before the drain every request was served.
    expect(outcomes.filter((o) => o.who === "bob" && o.kind === "result")).toEqual([]);
    expect(outcomes.slice(0, termAt - 10).every((o) => o.kind !== "error" || o.code === "FORBIDDEN")).toBe(
      true,
    );
    // From the drain on, new requests are refused HOST_SHUTTING_DOWN (the tool call kept it draining).
    expect(counts["error HOST_SHUTTING_DOWN"] ?? 0).toBeGreaterThan(0);
    expect(errorCodeInfo.HOST_SHUTTING_DOWN.retriable).toBe(true);
    expect(after.every((o) => o.kind === "no-responders")).toBe(true);

    // The request in flight got its reply: waiting for a person past the drain's grace (3 s), it is
    // answered HOST_SHUTTING_DOWN; the stop fence ended the turn and the prompt, announced.
    const toolReply = await inFlight;
    console.log(`drain: the tool call in flight got ${JSON.stringify(toolReply)}`);
    expect(toolReply).toEqual({ kind: "error", code: "HOST_SHUTTING_DOWN", retriable: true });
    expect(await events.waitFor(isEvent("permission.resolved", (e) => e.toolCallId === "b1"))).toMatchObject({
      decision: "deny",
      code: "PERMISSION_INTERRUPTED",
    });
    expect(await turnEnded(events, a.turnId)).toMatchObject({ status: "aborted", code: "HOST_STOPPING" });
    // The pending approval of the released session ended interrupted, and its event says so.
    expect(await approvalRow(stack, proposal.proposalId)).toMatchObject({
      status: "interrupted",
      error_code: "PLAN_APPROVAL_INTERRUPTED",
    });
    expect(
      await planEvents.waitFor(isEvent("plan.changed", (e) => e.action === "interrupted")),
    ).toMatchObject({ status: "interrupted", proposal: { proposalId: proposal.proposalId } });
    // The host row says stopped: another host takes its sessions over at once.
    expect(await rows(stack, "SELECT state FROM hosts")).toEqual([{ state: "stopped" }]);
    expect(host.lines.some((l) => l.includes('"host.stop_fence"') && l.includes('"hostStopped":true'))).toBe(
      true,
    );
    events.stop();
    planEvents.stop();
  }, 120_000);
});
