// The host under random faults (issue #12 acceptance, fast-check): random tool output sizes and
// contents (text, control characters, NUL bytes, invalid UTF-8, up to a few hundred KiB) and random
// terminations of the host's database backends during a plan cycle (plan turn with Bash, submit,
// approve, execution with a Bash that leaves a side effect). Afterwards the host is the same process
// and the rows hold: every tool_calls row has its audit row; at most one pending approval per
// session; an approved row's session is in Agent or its execution ended; once each session is
// aborted no turn is left running; no side effect exists without its tool_calls row.
import { readdirSync } from "node:fs";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AppError } from "../services/protocol/app-error.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { sandboxWorkspace } from "./support/sandbox.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { useBackendTerminator } from "./support/db-faults.ts";
import { promptAndClaim } from "./support/worker-double.ts";

const stack = useStack("invariants", { host: true, extra: { PI_TURN_LEASE_MS: "600000" } });
const terminate = useBackendTerminator(stack);

/** Terminates the host's backends after `ms` (null: no fault this time). */
async function fault(ms: number | null): Promise<void> {
  if (ms !== null) await terminate(ms);
}

/** A request raced by a fault: its value, or null when refused (only AppErrors are expected). */
async function attempt<T>(p: Promise<T>, faultMs: number | null): Promise<T | null> {
  const [r] = await Promise.all([
    p.then(
      (v) => v,
      (err) => {
        if (!(err instanceof AppError)) throw err;
        tally.refusals++;
        return null;
      },
    ),
    fault(faultMs),
  ]);
  return r;
}

/** A shell command printing `size` bytes of the given kind. */
function output(kind: "text" | "control" | "nul" | "invalid-utf8", size: number): string {
  const byte = { text: "x", control: "\\001", nul: "\\000", "invalid-utf8": "\\377" }[kind];
  return `head -c ${size} /dev/zero | tr '\\0' '${byte}'`;
}

const runArb = fc.record({
  kind: fc.constantFrom("text" as const, "control" as const, "nul" as const, "invalid-utf8" as const),
  size: fc.integer({ min: 0, max: 300_000 }),
  faults: fc.array(fc.option(fc.integer({ min: 0, max: 15 }), { nil: null, freq: 2 }), {
    minLength: 4,
    maxLength: 4,
  }),
});

type Run = { kind: "text" | "control" | "nul" | "invalid-utf8"; size: number; faults: Array<number | null> };
const tally = { runs: 0, outputs: 0, submitted: 0, approved: 0, executed: 0, refusals: 0 };

async function planCycle(projectId: string, run: Run, n: number) {
  const alice = stack.client("alice");
  const session = await eventually(() =>
    alice.call("session.create", { projectId, mode: "plan", permissionMode: "auto" }),
  );
  const a = await eventually(() => promptAndClaim(stack, session.id));
  const exec = (t: TurnAssignment, id: string, tool: string, args: Record<string, unknown>) =>
    stack.agentClient.call("tools.execute", {
      sessionId: session.id,
      turnId: t.turnId,
      token: t.token,
      toolCallId: id,
      tool,
      args,
      batch: [{ toolCallId: id, tool }],
    });
  tally.runs++;
  if (
    await attempt(exec(a, `out-${n}`, "Bash", { command: output(run.kind, run.size) }), run.faults[0] ?? null)
  )
    tally.outputs++;
  await attempt(
    exec(a, `exit-${n}`, "ExitPlanMode", { title: `P${n}`, markdown: `# Plan ${n}\n`, question: "ok?" }),
    run.faults[1] ?? null,
  );
  const pending = await eventually(() => alice.call("plans.pending", { sessionId: session.id }));
  const proposal = pending.proposals[0];
  if (proposal) {
    tally.submitted++;
    await attempt(
      alice.call("plans.resolve", {
        proposalId: proposal.proposalId,
        sessionId: session.id,
        turnId: proposal.turnId,
        toolCallId: proposal.toolCallId,
        action: "approve",
        targetPermissionMode: "auto",
      }),
      run.faults[2] ?? null,
    );
    const row = (
      await stack.db.pool.query("SELECT execution_turn_id FROM plan_approvals WHERE id = $1", [
        proposal.proposalId,
      ])
    ).rows[0];
    if (row?.execution_turn_id) {
      tally.approved++;
      const e = await attempt(
        stack.agentClient.call("claim", { turnId: row.execution_turn_id, workerId: "testworker" }),
        null,
      );
      if (e) {
        const side = await attempt(
          exec(e, `side-${n}`, "Bash", { command: `echo done > side-${n}` }),
          run.faults[3] ?? null,
        );
        if (side) tally.executed++;
        await attempt(
          stack.agentClient.call("turn.end", { turnId: e.turnId, token: e.token, status: "completed" }),
          null,
        );
      }
    }
  }
  // Settle: whatever is left of the session is aborted (a retry while the database comes back).
  await eventually(() => alice.call("session.abort", { sessionId: session.id }).then(() => true));
  return session.id;
}

async function invariants(sessionIds: string[], ws: string) {
  const q = async (sql: string, params: unknown[] = []) => (await stack.db.pool.query(sql, params)).rows;
  expect(
    await q(`SELECT tc.tool_call_id FROM tool_calls tc WHERE NOT EXISTS (
               SELECT 1 FROM audit_log a WHERE a.turn_id = tc.turn_id AND a.tool_call_id = tc.tool_call_id)`),
  ).toEqual([]);
  expect(
    await q("SELECT session_id FROM plan_approvals WHERE status = 'pending' GROUP BY 1 HAVING count(*) > 1"),
  ).toEqual([]);
  expect(
    await q(`SELECT a.id FROM plan_approvals a JOIN sessions s ON s.id = a.session_id
              WHERE a.status = 'approved' AND s.mode <> 'agent' AND a.execution_state NOT IN ('completed', 'interrupted')`),
  ).toEqual([]);
  expect(
    await q("SELECT id FROM turns WHERE status = 'running' AND session_id = ANY($1)", [sessionIds]),
  ).toEqual([]);
  const sideEffects = readdirSync(ws).filter((f) => f.startsWith("side-"));
  const recorded = new Set(
    (await q("SELECT tool_call_id FROM tool_calls WHERE tool = 'Bash' AND tool_call_id LIKE 'side-%'")).map(
      (r) => r.tool_call_id,
    ),
  );
  for (const f of sideEffects) expect(recorded.has(f)).toBe(true);
}

describe("the host under random output and lost database connections", () => {
  it("stays up and keeps its invariants", async () => {
    const pid = stack.host!.child.pid;
    const ws = sandboxWorkspace(stack, "invariants");
    const project = await stack.client("alice").call("projects.create", { name: "inv", workspaceRoot: ws });
    const sessions: string[] = [];
    let n = 0;
    await fc
      .assert(
        fc.asyncProperty(runArb, async (run) => {
          sessions.push(await planCycle(project.id, run, ++n));
          await invariants(sessions, ws);
          expect(stack.host!.child.pid).toBe(pid);
          expect(stack.host!.child.exitCode).toBeNull();
        }),
        { numRuns: 15 },
      )
      .catch((err: unknown) => {
        // What the host said last, so a failure says whether it exited, was fenced or hung.
        const host = stack.host!;
        const firstRaw = host.lines.findIndex((l) => !l.startsWith("{"));
        const said =
          firstRaw >= 0
            ? host.lines.slice(Math.max(0, firstRaw - 10), firstRaw + 40)
            : host.lines.filter((l) => !l.includes('"level":"info"')).slice(-30);
        console.error(
          `host exit code ${host.child.exitCode}; its last warnings and errors:\n${said.join("\n")}`,
        );
        throw err;
      });
    console.log(`plan cycles: ${JSON.stringify(tally)}`);
    // The property ran the whole cycle at least once (not only refusals).
    expect(tally.executed).toBeGreaterThan(0);
  }, 240_000);
});
