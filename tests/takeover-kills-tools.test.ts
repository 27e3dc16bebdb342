// A host that finds itself taken over kills what it runs first (docs/architecture.md "Several hosts"),
// written as the attack that found it: a SIGSTOPped host's in-flight Bash created a file 20 s after
// `host.takeover`, while the new owner had recorded the call TOOL_OUTCOME_UNKNOWN. Here h1 owns the
// session and runs `sleep; touch` in the sandbox; h1 is paused until h2 takes it over, then resumed:
// h1 kills its sandboxes before anything else, the file never appears, and the new owner's record
// stays TOOL_OUTCOME_UNKNOWN.
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { ToolExecuteResult } from "../services/protocol/schemas.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./support/processes.ts";
import { sandboxWorkspace } from "./support/sandbox.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { executeTool, promptAndClaim } from "./support/worker-double.ts";

let h2: ManagedProcess | null = null;
const stack = useStack("takeoverkill", {
  host: true,
  // The turn's own lease outlives the pause: only the host lease (1.5 s) decides the takeover.
  extra: { PI_TURN_LEASE_MS: "600000" },
  timeoutMs: 90_000,
  setup: (s) => async () => {
    if (s.host?.child.pid) s.host.child.kill("SIGCONT");
    await h2?.kill();
  },
});

describe("a host taken over while paused", () => {
  it("kills its running Bash at once when it resumes: no late write, the new owner's record stays", async () => {
    const h1 = stack.host!;
    const ws = sandboxWorkspace(stack, "late");
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", { name: "late", workspaceRoot: ws });
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
      permissionMode: "auto",
    });
    const a = await promptAndClaim(stack, session.id);
    expect(a.host).toBe("h1");
    h2 = spawnTs(
      "services/host/main.ts",
      hostEnv({ ...stack.env, extra: { ...stack.env.extra, PI_HOST_ID: "h2" } }),
    );
    await h2.waitForEvent("host.ready", 60_000);

    const started = Date.now();
    const bash = executeTool(stack, a, "late-1", "Bash", {
      command: "sleep 6; touch late",
      timeout: 30,
    }).then(
      (r: ToolExecuteResult) => r,
      (e: unknown) => e,
    );
    await eventually(async () => {
      const r = await stack.db.pool.query("SELECT 1 FROM tool_call_starts WHERE tool_call_id = 'late-1'");
      return r.rowCount === 1;
    });
    h1.child.kill("SIGSTOP");
    const takeover = await h2.waitForEvent("host.takeover", 20_000);
    expect(takeover).toMatchObject({ deadHostId: "h1" });
    const record = async () =>
      (
        await stack.db.pool.query<{ code: string }>(
          "SELECT code FROM tool_calls WHERE turn_id = $1 AND tool_call_id = 'late-1'",
          [a.turnId],
        )
      ).rows;
    expect(await record()).toEqual([{ code: "TOOL_OUTCOME_UNKNOWN" }]);
    // Resumed well before the command would write: it never gets to.
    expect(Date.now() - started).toBeLessThan(5_000);
    h1.child.kill("SIGCONT");
    const killed = await h1.waitForEvent("host.tools_killed", 10_000);
    expect(killed).toMatchObject({ killed: 1 });
    expect(["superseded", "no_heartbeat", "fenced"]).toContain(killed.reason);
    await bash;
    await new Promise((r) => setTimeout(r, Math.max(0, started + 8_000 - Date.now())));
    expect(existsSync(path.join(ws, "late"))).toBe(false);
    expect(await record()).toEqual([{ code: "TOOL_OUTCOME_UNKNOWN" }]);
    // The session is h2's now, and h2 serves it.
    const lease = await stack.db.pool.query("SELECT host_id FROM session_leases WHERE session_id = $1", [
      session.id,
    ]);
    expect(lease.rows).toEqual([{ host_id: "h2" }]);
    expect((await alice.call("session.get", { sessionId: session.id })).id).toBe(session.id);
  });
});
