// No tool runs without a record (issue #12 clause 4), written as the careless agent and the crash:
// a lone surrogate in a toolCallId or a NUL in a path is refused before anything runs (Bash ran
// twice and Write wrote a file before, each answered INTERNAL with no row); output Postgres cannot
// store is repaired, so a Bash that succeeded is reported as succeeded; a call that started and was
// never recorded is TOOL_OUTCOME_UNKNOWN and does not run again; a host killed while Bash runs is
// fenced with that result, its transcript entry and its audit row.
import { existsSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { sandboxTurn } from "./support/sandbox.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, refusalCode } from "./support/worker-double.ts";

const stack = useStack("recorded", { host: true, extra: { PI_TURN_LEASE_MS: "600000" } });

const exec = (a: TurnAssignment, toolCallId: string, tool: string, args: Record<string, unknown>) =>
  executeTool(stack, a, toolCallId, tool, args);

const rowsOf = async (sql: string, params: unknown[]) => (await stack.db.pool.query(sql, params)).rows;
const toolRows = (turnId: string) =>
  rowsOf("SELECT tool_call_id, code FROM tool_calls WHERE turn_id = $1 ORDER BY created_at", [turnId]);
const auditOf = (turnId: string, toolCallId: string) =>
  rowsOf("SELECT action, code FROM audit_log WHERE turn_id = $1 AND tool_call_id = $2 ORDER BY id", [
    turnId,
    toolCallId,
  ]);

describe("no tool runs without a record", () => {
  it("a lone surrogate in a toolCallId or a NUL in a path is INVALID_PARAMS before anything runs", async () => {
    const { ws, assignment: a } = await sandboxTurn(stack, "agent");
    const marker = path.join(ws, "ran.txt");
    for (let i = 0; i < 2; i++)
      expect(await refusalCode(exec(a, "call-\ud800", "Bash", { command: "echo x >> ran.txt" }))).toBe(
        "INVALID_PARAMS",
      );
    // In the model's arguments it is a refusal the model sees, recorded like any other.
    expect(await exec(a, "w1", "Write", { path: "bad\u0000.txt", content: "x" })).toMatchObject({
      isError: true,
      code: "INVALID_PARAMS",
      details: { path: "/args/path" },
    });
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(path.join(ws, "bad"))).toBe(false);
    expect(await toolRows(a.turnId)).toEqual([{ tool_call_id: "w1", code: "INVALID_PARAMS" }]);
    expect(await auditOf(a.turnId, "w1")).toHaveLength(1);
  });

  it("output with a NUL is recorded repaired: the Bash that succeeded is reported as succeeded", async () => {
    const { assignment: a } = await sandboxTurn(stack, "agent");
    const r = await exec(a, "nul", "Bash", { command: "printf 'a\\000b\\n'" });
    expect(r.isError).toBe(false);
    // One NUL, in the text and in details.stdout: each replacement counted.
    expect(r.details).toMatchObject({ sanitized: 2, stdout: "a\ufffdb\n" });
    expect(r.content[0]!.text).toContain("a\ufffdb");
    expect(await toolRows(a.turnId)).toEqual([{ tool_call_id: "nul", code: null }]);
    expect(await auditOf(a.turnId, "nul")).toHaveLength(1);
  });

  it("a call that started and was never recorded is TOOL_OUTCOME_UNKNOWN and never runs again", async () => {
    const { ws, assignment: a } = await sandboxTurn(stack, "agent");
    // As a host that died after writing the start row (or failed to record the result) leaves it.
    await stack.db.pool.query(
      "INSERT INTO tool_call_starts (turn_id, tool_call_id, session_id, tool, started_at) VALUES ($1, 'b1', $2, 'Bash', now())",
      [a.turnId, a.sessionId],
    );
    const r = await exec(a, "b1", "Bash", { command: "echo again >> ran.txt" });
    expect(r).toMatchObject({ isError: true, code: "TOOL_OUTCOME_UNKNOWN" });
    expect(existsSync(path.join(ws, "ran.txt"))).toBe(false);
    expect(await toolRows(a.turnId)).toEqual([{ tool_call_id: "b1", code: "TOOL_OUTCOME_UNKNOWN" }]);
    expect(await auditOf(a.turnId, "b1")).toHaveLength(1);
    // And the retry of that gets the same recorded answer.
    expect(await exec(a, "b1", "Bash", { command: "echo again >> ran.txt" })).toEqual(r);
  });

  it("a read-only tool's start row commits with its facts, before it runs: a Read started and never recorded does not run again", async () => {
    const { ws, assignment: a } = await sandboxTurn(stack, "agent");
    writeFileSync(path.join(ws, "note.txt"), "secret-ish\n");
    // As a host that died while the Read ran leaves it: the start row alone.
    await stack.db.pool.query(
      "INSERT INTO tool_call_starts (turn_id, tool_call_id, session_id, tool, started_at) VALUES ($1, 'r1', $2, 'Read', now())",
      [a.turnId, a.sessionId],
    );
    const r = await exec(a, "r1", "Read", { path: "note.txt" });
    expect(r).toMatchObject({ isError: true, code: "TOOL_OUTCOME_UNKNOWN" });
    expect(JSON.stringify(r)).not.toContain("secret-ish");
    expect(await exec(a, "r1", "Read", { path: "note.txt" })).toEqual(r);
    // A Read that runs: its start row was committed before its record (another transaction), and
    // a repeat gets the recorded result without a second start.
    const ok = await exec(a, "r2", "Read", { path: "note.txt" });
    expect(ok.isError).toBe(false);
    const xmins = await rowsOf(
      `SELECT (SELECT xmin::text FROM tool_call_starts WHERE turn_id = $1 AND tool_call_id = 'r2') AS start,
              (SELECT xmin::text FROM tool_calls WHERE turn_id = $1 AND tool_call_id = 'r2') AS record`,
      [a.turnId],
    );
    expect(xmins[0]!.start).toEqual(expect.any(String));
    expect(xmins[0]!.record).not.toBe(xmins[0]!.start);
    expect(await exec(a, "r2", "Read", { path: "note.txt" })).toEqual(ok);
    expect(
      await rowsOf("SELECT 1 FROM tool_call_starts WHERE turn_id = $1 AND tool_call_id = 'r2'", [a.turnId]),
    ).toHaveLength(1);
    // A Read the policy refuses (not alone beside ExitPlanMode) gets no start row: only its record.
    const alone = await executeTool(
      stack,
      a,
      "r3",
      "Read",
      { path: "note.txt" },
      {
        batch: [
          { toolCallId: "r3", tool: "Read" },
          { toolCallId: "x3", tool: "ExitPlanMode" },
        ],
      },
    );
    expect(alone).toMatchObject({ isError: true, code: "TOOL_MUST_BE_ALONE" });
    expect(
      await rowsOf("SELECT 1 FROM tool_call_starts WHERE turn_id = $1 AND tool_call_id = 'r3'", [a.turnId]),
    ).toEqual([]);
    expect(await toolRows(a.turnId)).toEqual([
      { tool_call_id: "r1", code: "TOOL_OUTCOME_UNKNOWN" },
      { tool_call_id: "r2", code: null },
      { tool_call_id: "r3", code: "TOOL_MUST_BE_ALONE" },
    ]);
  });

  it("a host killed while Bash runs: the fence records TOOL_OUTCOME_UNKNOWN with its transcript entry and audit row", async () => {
    const { ws, assignment: a } = await sandboxTurn(stack, "agent");
    void exec(a, "slow", "Bash", { command: "sleep 5; echo late >> late.txt" }).catch(() => {});
    await eventually(
      async () => (await rowsOf("SELECT 1 FROM tool_call_starts WHERE turn_id = $1", [a.turnId])).length,
    );
    await stack.host!.kill();
    const host = await stack.startHost();
    expect(await host.waitForEvent("host.fence")).toMatchObject({ toolOutcomesUnknown: 1 });
    expect(await toolRows(a.turnId)).toEqual([{ tool_call_id: "slow", code: "TOOL_OUTCOME_UNKNOWN" }]);
    expect(await auditOf(a.turnId, "slow")).toEqual([
      { action: "fence.tool_call", code: "TOOL_OUTCOME_UNKNOWN" },
    ]);
    const entry = await rowsOf(
      "SELECT message FROM transcript_entries WHERE turn_id = $1 AND role = 'toolResult'",
      [a.turnId],
    );
    expect(entry).toEqual([
      { message: expect.objectContaining({ toolCallId: "slow", toolName: "Bash", isError: true }) },
    ]);
    // The sandbox died with the host (its process group); nothing finished it later.
    await new Promise((r) => setTimeout(r, 5_500));
    expect(existsSync(path.join(ws, "late.txt"))).toBe(false);
  }, 60_000);
});
