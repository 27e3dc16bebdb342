// Nothing the host sends exceeds the server's max_payload (issue #12 clause 1; docs/protocol.md
// "Message bounds"), written as the careless agent: a Read of 200 KiB of control characters (about
// 1.2 MiB once JSON-escaped), a Grep whose matches escape to megabytes, Bash printing 64 KiB of them
// on each stream, a Glob over tens of thousands of long names, and a transcript entry bigger than
// any message (left by a host with a larger max_payload). Each is answered, bounded and marked; the
// host stays up (same process); the session's context is still fetched page by page afterwards, the
// oversized entry in parts that join to it whole.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ContextPage } from "../services/protocol/agent-schemas.ts";
import type { ToolExecuteResult, TurnAssignment } from "../services/protocol/schemas.ts";
import { createPartJoiner } from "../services/agent/bounded-call.ts";
import { agentTurnIn, sandboxTurn, toolCaller, writeSandboxFile } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("bounds", { host: true });

const CONTROL = "\u0001";
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

function maxPayload(): number {
  const max = stack.nc.info?.max_payload;
  if (!max) throw new Error("no max_payload in the server's INFO");
  return max;
}

/** A tool result the host sent: within a quarter of max_payload, cut with the marker. */
function expectBounded(r: ToolExecuteResult) {
  expect(bytes({ result: r })).toBeLessThanOrEqual(maxPayload());
  expect(bytes(r)).toBeLessThanOrEqual(Math.floor(maxPayload() / 4));
  expect(r.content.at(-1)!.text).toMatch(
    /\[output truncated by the host: \d+ of \d+ characters shown, \d+ bytes in full\]$/,
  );
  const t = (r.details as { truncated?: { fullBytes: number } }).truncated;
  expect(t?.fullBytes).toBeGreaterThan(Math.floor(maxPayload() / 4));
}

/** Every context page, as the worker joins them (an entry over a page comes in parts). */
async function allContext(a: TurnAssignment): Promise<unknown[]> {
  const messages: unknown[] = [];
  const joiner = createPartJoiner();
  let cursor: number | null = 0;
  let part: number | undefined;
  while (cursor !== null) {
    const page: ContextPage = await stack.agentClient.call("context", {
      turnId: a.turnId,
      token: a.token,
      cursor,
      ...(part === undefined ? {} : { part }),
    });
    expect(bytes({ result: page })).toBeLessThanOrEqual(maxPayload());
    messages.push(...joiner.add(page.messages));
    cursor = page.nextCursor;
    part = page.nextPart;
  }
  return messages;
}

describe("nothing the host sends exceeds max_payload", () => {
  it("big, escape-heavy tool results are answered bounded and marked, the host stays up, and the context still pages", async () => {
    const pid = stack.host!.child.pid;
    const { ws, assignment: a, projectId } = await sandboxTurn(stack, "agent");
    const call = toolCaller(stack);
    const events = stack.events(a.sessionId);

    writeSandboxFile(path.join(ws, "control.txt"), CONTROL.repeat(200 * 1024));
    const read = await call(a, "Read", { path: "control.txt" });
    expect(read.isError).toBe(false);
    expectBounded(read);

    writeSandboxFile(
      path.join(ws, "matches.txt"),
      Array.from({ length: 600 }, (_, i) => `${CONTROL.repeat(400)} needle ${i}`).join("\n"),
    );
    expectBounded(await call(a, "Grep", { pattern: "needle" }));

    const bash = await call(a, "Bash", {
      command: "head -c 65536 /dev/zero | tr '\\0' '\\001'; head -c 65536 /dev/zero | tr '\\0' '\\001' >&2",
    });
    expect(bash.isError).toBe(false);
    expectBounded(bash);
    // Its streamed output arrived as events, none over the bound.
    await events.waitFor((e) => e.type === "tool.output");
    for (const e of events.all) expect(bytes(e)).toBeLessThanOrEqual(maxPayload());

    const many = path.join(ws, "many");
    mkdirSync(many);
    for (let i = 0; i < 20_000; i++)
      writeFileSync(path.join(many, `${CONTROL.repeat(180)}-${String(i).padStart(6, "0")}`), "");
    const glob = await call(a, "Glob", { pattern: "many/*" });
    expect(glob.isError).toBe(false);
    expect(bytes({ result: glob })).toBeLessThanOrEqual(Math.floor(maxPayload() / 4));

    // A retry of the Read gets the recorded (bounded) result, not a crash.
    const again = await stack.agentClient.call("tools.execute", {
      sessionId: a.sessionId,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "c1",
      tool: "Read",
      args: { path: "control.txt" },
      batch: [{ toolCallId: "c1", tool: "Read" }],
    });
    expect(again).toEqual(read);

    // An entry bigger than any message, as a host with a larger max_payload could have recorded.
    await stack.db.pool.query(
      `INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at)
       VALUES ($1, $2, 'user', $3::jsonb, now())`,
      [
        a.sessionId,
        a.turnId,
        JSON.stringify({ role: "user", content: CONTROL.repeat(400_000), timestamp: 1 }),
      ],
    );
    const context = await allContext(a);
    // It came in parts and is whole again: nothing of it was cut.
    const last = context.at(-1) as { content: string };
    expect(last.content).toBe(CONTROL.repeat(400_000));
    // The tool results are in the context, bounded as recorded.
    expect(
      context.filter((m) => (m as { role?: string }).role === "toolResult").length,
    ).toBeGreaterThanOrEqual(4);

    // Still the same host, and the session's next turn works.
    expect(stack.host!.child.pid).toBe(pid);
    expect(stack.host!.child.exitCode).toBeNull();
    await stack.agentClient.call("turn.end", {
      turnId: a.turnId,
      token: a.token,
      status: "completed",
    });
    const next = await agentTurnIn(stack, projectId);
    expect((await call(next, "Glob", { pattern: "*.txt" })).isError).toBe(false);
    events.stop();
  }, 120_000);
});
