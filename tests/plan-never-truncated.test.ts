// A plan is never truncated (issue #12 clause 2), on the shared nats-server's default max_payload
// (1 MiB): a worker submits a 512 KiB plan of control characters (about 3 MiB JSON-escaped) through
// the worker's own bounded calls (services/agent/bounded-call.ts: the body in parts), appends the
// assistant message carrying it the same way, and after the approval the execution turn's context
// brings the whole plan back in parts that join to exactly the submitted text; artifacts.read pages
// reassemble to the submitted bytes and hash. A NUL in the markdown is PLAN_INVALID_ARGUMENT before
// any file or row exists.
import { createHash } from "node:crypto";
import { readdirSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { callBounded, createPartJoiner } from "../services/agent/bounded-call.ts";
import { agentClient } from "../services/protocol/rpc-client.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { approvalRow, approveProposal, newPlanSession, submitted } from "./support/plans.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim } from "./support/worker-double.ts";

const stack = useStack("planbig", { host: true, extra: { PI_TURN_LEASE_MS: "600000" } });

/** 512 KiB of every control character but NUL, and some text. */
function bigPlan(): string {
  const head = "# A plan of control characters\n\n";
  const body: string[] = [];
  let n = head.length;
  for (let i = 0; n < 512 * 1024; i++) {
    const c = String.fromCharCode(1 + (i % 31));
    body.push(c);
    n += 1;
  }
  return head + body.join("");
}

async function contextOf(a: TurnAssignment): Promise<unknown[]> {
  const worker = agentClient({ nc: stack.nc, prefix: stack.env.prefix, timeoutMs: 10_000 }).to(a.host);
  const joiner = createPartJoiner();
  const messages: unknown[] = [];
  let cursor: number | undefined;
  let part: number | undefined;
  let pages = 0;
  for (;;) {
    const page = await worker.call("context", {
      turnId: a.turnId,
      token: a.token,
      ...(cursor === undefined ? {} : { cursor }),
      ...(part === undefined ? {} : { part }),
    });
    pages++;
    expect(Buffer.byteLength(JSON.stringify({ result: page }))).toBeLessThanOrEqual(
      stack.nc.info!.max_payload,
    );
    messages.push(...joiner.add(page.messages));
    if (page.nextCursor === null) break;
    cursor = page.nextCursor;
    part = page.nextPart;
  }
  expect(pages).toBeGreaterThan(2);
  return messages;
}

describe("a plan is never truncated", () => {
  it("a 512 KiB plan of control characters goes up in parts, is approved, and comes back whole", async () => {
    expect(stack.nc.info!.max_payload).toBeLessThanOrEqual(1024 * 1024);
    const markdown = bigPlan();
    expect(Buffer.byteLength(markdown)).toBe(512 * 1024);
    const { session } = await newPlanSession(stack, "big", []);
    const events = stack.events(session.id);
    const a = await promptAndClaim(stack, session.id);
    const worker = agentClient({ nc: stack.nc, prefix: stack.env.prefix, timeoutMs: 30_000 }).to(a.host);
    const args = { title: "Big", markdown, question: "All of it?" };
    // The assistant message carrying the call, then the call itself, each far over max_payload.
    await callBounded(stack.nc, worker, "append", {
      turnId: a.turnId,
      token: a.token,
      messages: [
        {
          role: "assistant",
          content: [{ type: "toolCall", id: "exit-1", name: "ExitPlanMode", arguments: args }],
          timestamp: Date.now(),
        },
      ],
    });
    const r = await callBounded(stack.nc, worker, "tools.execute", {
      sessionId: session.id,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "exit-1",
      tool: "ExitPlanMode",
      args,
      batch: [{ toolCallId: "exit-1", tool: "ExitPlanMode" }],
    });
    expect(r.isError).toBe(false);
    const proposal = await submitted(events);
    const sha = createHash("sha256").update(markdown).digest("hex");
    expect(proposal).toMatchObject({ sha256: sha, byteSize: 512 * 1024 });

    // artifacts.read pages reassemble to the submitted bytes.
    const alice = stack.client("alice");
    const chunks: Buffer[] = [];
    let offset: number | null = 0;
    while (offset !== null) {
      const page: { data: string; nextOffset: number | null; recordedSha256: string } = await alice.call(
        "artifacts.read",
        { proposalId: proposal.proposalId, offset },
      );
      chunks.push(Buffer.from(page.data, "base64"));
      expect(page.recordedSha256).toBe(sha);
      offset = page.nextOffset;
    }
    expect(createHash("sha256").update(Buffer.concat(chunks)).digest("hex")).toBe(sha);

    await approveProposal(stack, proposal, "auto");
    const execTurn = (await approvalRow(stack, proposal.proposalId)).execution_turn_id!;
    const exec = await worker.call("claim", { turnId: execTurn, workerId: "testworker" });
    const context = await contextOf(exec);
    // The execution's opening message holds the approved plan exactly; the planning turn's
    // assistant message holds the call's arguments exactly.
    const opening = context.find(
      (m) =>
        (m as { role?: string; content?: unknown }).role === "user" &&
        String((m as { content: unknown }).content).includes("was approved"),
    ) as { content: string };
    expect(opening.content.endsWith(markdown)).toBe(true);
    const call = context.find((m) => (m as { role?: string }).role === "assistant") as {
      content: Array<{ arguments: { markdown: string } }>;
    };
    expect(call.content[0]!.arguments.markdown).toBe(markdown);
    events.stop();
  }, 90_000);

  it("a NUL in the markdown is PLAN_INVALID_ARGUMENT before any file or row exists", async () => {
    const { session, ws } = await newPlanSession(stack, "nul", []);
    const a = await promptAndClaim(stack, session.id);
    const r = await stack.agentClient.call("tools.execute", {
      sessionId: session.id,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "exit-nul",
      tool: "ExitPlanMode",
      args: { title: "N", markdown: "# N\n\u0000\n", question: "?" },
      batch: [{ toolCallId: "exit-nul", tool: "ExitPlanMode" }],
    });
    expect(r).toMatchObject({ isError: true, code: "PLAN_INVALID_ARGUMENT" });
    const rows = await stack.db.pool.query("SELECT 1 FROM plan_approvals WHERE session_id = $1", [
      session.id,
    ]);
    expect(rows.rowCount).toBe(0);
    let files: string[] = [];
    try {
      files = readdirSync(path.join(ws, ".pi", "plan"));
    } catch {}
    expect(files).toEqual([]);
  });
});
