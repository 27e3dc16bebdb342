// Every call the model makes goes to the host (issue #13 clause 5), written as the strange model: in
// Plan it calls Write (not offered there) and a tool no one has (Frobnicate). A real worker forwards
// both to tools.execute: the host decides, records and audits each (WRITE_DISABLED_IN_PLAN;
// TOOL_DISABLED_IN_PLAN for a name no tool has), people see the refusals as events, nothing is written, and the model is never
// offered either name afterwards.
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { newPlanSession, turnEnded } from "./support/plans.ts";
import { useStack } from "./support/stack-fixture.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("invented", { host: true, worker: true });

describe("a tool call the model was not offered", () => {
  it("is decided, recorded and audited by the host, and shown to people", async () => {
    const { session, ws } = await newPlanSession(stack, "invented", [
      { toolCalls: [{ name: "Write", args: { path: "written.txt", content: "no" } }] },
      { toolCalls: [{ name: "Frobnicate", args: { level: 11 } }] },
      { text: "I could not write it." },
    ]);
    const events = stack.events(session.id);
    const { turnId } = await stack
      .client("alice")
      .call("session.prompt", { sessionId: session.id, text: "write a file" });
    await turnEnded(events, turnId, 30_000);

    const results = events.all.filter(isEvent("tool.result"));
    expect(results.map((r) => [r.tool, r.decision, r.code])).toEqual([
      ["Write", "deny", "WRITE_DISABLED_IN_PLAN"],
      ["Frobnicate", "deny", "TOOL_DISABLED_IN_PLAN"],
    ]);
    const rows = await stack.db.pool.query(
      `SELECT tc.tool, tc.decision, tc.code, (SELECT count(*)::int FROM audit_log a
              WHERE a.turn_id = tc.turn_id AND a.tool_call_id = tc.tool_call_id) AS audits
         FROM tool_calls tc WHERE tc.turn_id = $1 ORDER BY tc.created_at`,
      [turnId],
    );
    expect(rows.rows.map((r) => [r.tool, r.decision, r.audits])).toEqual([
      ["Write", "deny", 1],
      ["Frobnicate", "deny", 1],
    ]);
    expect(existsSync(path.join(ws, "written.txt"))).toBe(false);
    // Every model call was offered the Plan tools only: never the invented names.
    const calls = stack.callLog().filter((c) => c.turnId === turnId);
    expect(calls.length).toBe(3);
    for (const c of calls) {
      expect(c.tools).not.toContain("Write");
      expect(c.tools).not.toContain("Frobnicate");
    }
    events.stop();
  }, 60_000);
});
