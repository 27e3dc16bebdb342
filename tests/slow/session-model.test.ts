// Model-based test of the session machine against the real host: @xstate/graph enumerates every
// transition of machines/session.machine.ts over the alphabet of events the host can deliver
// (tests/support/session-model.ts); each is replayed as real requests over NATS (or test hooks for
// time and step faults) on a fresh session, and the host's replies, codes and rows must match what
// the machine predicts. The test reports, for every transition, what drove it on the real host.
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AppError } from "../../services/protocol/app-error.ts";
import type { ProposalView, ToolExecuteResult } from "../../services/protocol/schemas.ts";
import {
  enumerateEdges,
  type ModelEdge,
  type ModelEvent,
  type Recorded,
  runModel,
} from "../support/session-model.ts";
import { eventually, type Stack } from "../support/stack.ts";
import { useStack } from "../support/stack-fixture.ts";

const STEP_OF: Record<string, string> = {
  prompting: "startTurn",
  configuring: "configure",
  claiming: "claimTurn",
  enteringPlan: "enterPlan",
  submitting: "submitPlan",
  resolving: "resolvePlan",
  expiring: "expirePlan",
  ending: "endTurn",
  aborting: "abortWork",
};
const STABLE = new Set(["idle", "running", "parked", "queued"]);

interface Outcome {
  kind: "ok" | "fail" | "error" | "none";
  code?: string;
}

interface PathCtx {
  sessionId: string;
  ws: string;
  mode: "agent" | "plan";
  turnId?: string;
  token?: string;
  proposal?: ProposalView;
  calls: number;
}

/** Shortest event paths from the initial state to every state, over the machine's own moves. */
function shortestPaths(edges: ModelEdge[], initial: string): Map<string, ModelEdge[]> {
  const paths = new Map<string, ModelEdge[]>([[initial, []]]);
  const queue = [initial];
  while (queue.length) {
    const from = queue.shift()!;
    for (const e of edges) {
      if (e.from !== from || e.selfLoop || paths.has(e.to)) continue;
      paths.set(e.to, [...paths.get(from)!, e]);
      queue.push(e.to);
    }
  }
  return paths;
}

const stateName = (serialized: string) => JSON.parse(serialized.split("|")[0]!) as string;

function createReplayer(stack: Stack) {
  const alice = stack.client("alice");
  const hook = (name: string, body: unknown = {}) => stack.hook(name, body);

  const outcome = async (p: Promise<unknown>): Promise<Outcome> => {
    try {
      const r = await p;
      const result = r as ToolExecuteResult | null;
      if (result && typeof result === "object" && "isError" in result && result.isError) {
        return {
          kind: result.code === "INTERNAL" ? "error" : "fail",
          ...(result.code ? { code: result.code } : {}),
        };
      }
      return { kind: "ok" };
    } catch (err) {
      if (err instanceof AppError)
        return err.code === "INTERNAL" ? { kind: "error" } : { kind: "fail", code: err.code };
      throw err;
    }
  };

  async function newSession(mode: "agent" | "plan"): Promise<PathCtx> {
    const ws = stack.newWorkspace(`m-${Math.random().toString(36).slice(2, 10)}`);
    const project = await alice.call("projects.create", { name: "model", workspaceRoot: ws });
    const s = await alice.call("session.create", { projectId: project.id, mode });
    return { sessionId: s.id, ws, mode, calls: 0 };
  }

  const tool = (ctx: PathCtx, name: string, args: Record<string, unknown>) => {
    const toolCallId = `call-${++ctx.calls}`;
    return stack.agentClient.call("tools.execute", {
      sessionId: ctx.sessionId,
      turnId: ctx.turnId ?? "turn_none",
      token: ctx.token ?? "tok_dead",
      toolCallId,
      tool: name,
      args,
      batch: [{ toolCallId, tool: name }],
    });
  };

  /** Sends the request for a client/worker event; `variant` is the done/error event that follows. */
  async function drive(
    ctx: PathCtx,
    e: ModelEvent,
    next: ModelEvent | undefined,
    modelHasTurn = true,
  ): Promise<{ driver: string; out: Promise<Outcome> }> {
    const followed = next?.label ?? "";
    switch (e.type) {
      case "PROMPT":
        return {
          driver: "rpc session.prompt",
          out: outcome(
            alice.call("session.prompt", { sessionId: ctx.sessionId, text: "go" }).then((r) => {
              ctx.turnId = r.turnId;
              ctx.token = undefined;
              return r;
            }),
          ),
        };
      case "CONFIGURE": {
        const mode = ctx.mode === "agent" ? "plan" : "agent";
        return {
          driver: `rpc session.configure {mode: ${mode}}`,
          out: outcome(
            alice.call("session.configure", { sessionId: ctx.sessionId, mode }).then((v) => {
              ctx.mode = v.mode;
              return v;
            }),
          ),
        };
      }
      case "ABORT":
        return {
          driver: "rpc session.abort",
          out: outcome(alice.call("session.abort", { sessionId: ctx.sessionId })),
        };
      case "RESOLVE": {
        const p = ctx.proposal;
        const action = followed.endsWith(":reject") ? "reject" : "approve";
        const body = p
          ? {
              proposalId: p.proposalId,
              sessionId: p.sessionId,
              turnId: p.turnId,
              toolCallId: p.toolCallId,
              action,
              targetPermissionMode: "accept-edits",
            }
          : {
              proposalId: "plan_none",
              sessionId: ctx.sessionId,
              turnId: "turn_none",
              toolCallId: "none",
              action,
              targetPermissionMode: "accept-edits",
            };
        if (action === "reject") delete (body as { targetPermissionMode?: string }).targetPermissionMode;
        return {
          driver: `rpc plans.resolve {action: ${action}}`,
          out: outcome(
            alice.call("plans.resolve", body).then((r) => {
              if (r.executionState === "queued" && r.executionId) {
                const row = stack.db.pool.query(
                  "SELECT execution_turn_id FROM plan_approvals WHERE id = $1",
                  [r.proposalId],
                );
                return row.then((x) => {
                  ctx.turnId = x.rows[0].execution_turn_id;
                  ctx.token = undefined;
                  ctx.mode = "agent";
                  return r;
                });
              }
              return r;
            }),
          ),
        };
      }
      case "CLAIM": {
        let driver = "agent claim";
        if (followed.endsWith(":hash-mismatch") && ctx.proposal) {
          writeFileSync(path.join(ctx.ws, ctx.proposal.artifactPath), "# changed after approval\n");
          driver = "plan file changed, then agent claim";
        }
        return {
          driver,
          out: outcome(
            stack.agentClient
              // With no turn in the model's state the claim names no turn either.
              .call("claim", {
                turnId: (modelHasTurn && ctx.turnId) || "turn_none",
                workerId: "model",
              })
              .then((a) => {
                ctx.token = a.token;
                return a;
              }),
          ),
        };
      }
      case "ENTER_PLAN":
        return {
          driver: "agent tools.execute EnterPlanMode",
          out: outcome(
            tool(ctx, "EnterPlanMode", {}).then((r) => {
              if (!r.isError) ctx.mode = "plan";
              return r;
            }),
          ),
        };
      case "SUBMIT_PLAN":
        return {
          driver: "agent tools.execute ExitPlanMode",
          out: outcome(
            tool(ctx, "ExitPlanMode", { title: "Model plan", markdown: "# plan\n", question: "ok?" }).then(
              async (r) => {
                if (!r.isError) {
                  const pending = await alice.call("plans.pending", {
                    sessionId: ctx.sessionId,
                  });
                  ctx.proposal = pending.proposals[0];
                }
                return r;
              },
            ),
          ),
        };
      case "TURN_ENDED":
        return {
          driver: "agent turn.end",
          out: outcome(
            stack.agentClient.call("turn.end", {
              turnId: ctx.turnId ?? "turn_none",
              token: ctx.token ?? "tok_dead",
              status: "completed",
            }),
          ),
        };
      case "xstate.after.approvalDeadline.session.parked":
        return {
          driver: "test hook clock.advance 31 min",
          out: hook("clock.advance", { ms: 31 * 60 * 1000 }).then(async () => {
            if (!followed.startsWith("done:expirePlan")) return { kind: "none" } as Outcome;
            await eventually(async () => {
              const r = await stack.db.pool.query(
                "SELECT status FROM plan_approvals WHERE session_id = $1 AND status = 'expired'",
                [ctx.sessionId],
              );
              return r.rowCount;
            });
            return { kind: "none" } as Outcome;
          }),
        };
    }
    throw new Error(`no driver for ${e.label}`);
  }

  /** Rows must say what the model's state says (stable states only). */
  async function checkRows(
    ctx: PathCtx,
    serialized: string,
    snap: { mode: string; state: string },
  ): Promise<string[]> {
    const problems: string[] = [];
    const r = await stack.db.pool.query(
      `SELECT s.mode,
              (SELECT count(*)::int FROM turns WHERE session_id = s.id AND status = 'running') AS running,
              (SELECT count(*)::int FROM plan_approvals WHERE session_id = s.id AND status = 'pending') AS pending,
              (SELECT count(*)::int FROM plan_approvals WHERE session_id = s.id AND execution_state = 'queued') AS queued,
              (SELECT count(*)::int FROM plan_approvals WHERE session_id = s.id AND execution_state = 'running') AS executing
       FROM sessions s WHERE s.id = $1`,
      [ctx.sessionId],
    );
    const row = r.rows[0];
    if (row.mode !== snap.mode) problems.push(`mode ${row.mode}, model ${snap.mode}`);
    const expect = {
      idle: { running: 0, pending: 0, queued: 0 },
      running: { running: 1, pending: 0, queued: 0 },
      parked: { running: 1, pending: 1, queued: 0 },
      queued: { running: 1, pending: 0, queued: 1 },
    }[snap.state as "idle" | "running" | "parked" | "queued"];
    for (const [k, v] of Object.entries(expect))
      if (row[k] !== v) problems.push(`${k} rows ${row[k]}, model ${v} (${serialized})`);
    if (snap.state === "idle" && row.executing !== 0) problems.push("an execution is still running in idle");
    return problems;
  }

  const same = (model: Recorded, host: Outcome) =>
    model.kind === "none" ||
    (model.kind === host.kind && (model.kind !== "fail" || model.code === host.code));

  /**
   * Drives `path` (moves from the initial state) and then, in the path's final state, each of
   * `probes` (events that do not change the state). Returns one report line per transition driven
   * and the mismatches found.
   */
  async function replay(
    path: ModelEdge[],
    probes: ModelEdge[],
  ): Promise<{ lines: string[]; mismatches: string[] }> {
    const events = [...path.map((e) => e.event), ...probes.map((e) => e.event)];
    const predicted = runModel(events);
    const lines: string[] = [];
    const mismatches: string[] = [];
    const first = path[0]!;
    const ctx = await newSession(first.event.label.endsWith(":plan") ? "plan" : "agent");
    lines.push(
      `${first.from} --${first.event.label}--> ${first.to}: session.create {mode: ${ctx.mode}} (rows read by the first request)`,
    );
    let held: { step: string; out: Promise<Outcome>; index: number } | null = null;
    for (let i = 1; i < path.length; i++) {
      const edge = path[i]!;
      const e = edge.event;
      const toState = stateName(edge.to);
      if (e.label.startsWith("done:") || e.label.startsWith("error:")) continue; // driven with the request before it
      const nextEdge = path[i + 1];
      const nextLabel = nextEdge?.event.label ?? "";
      const step = STEP_OF[toState];
      if (nextLabel.startsWith("error:"))
        await hook("faults.fail", { step: nextLabel.slice("error:".length) });
      const isLastMove = i === path.length - 1;
      if (step && isLastMove) await hook("faults.hold", { step });
      const { driver, out } = await drive(ctx, e, nextEdge?.event, !edge.from.includes("|-|"));
      if (step && isLastMove) {
        await hook("faults.held", { step });
        held = { step, out, index: i };
        lines.push(`${edge.from} --${e.label}--> ${edge.to}: ${driver} (held in ${step} by test hook)`);
        continue;
      }
      const got = await out;
      const doneEdge =
        nextEdge && (nextLabel.startsWith("done:") || nextLabel.startsWith("error:")) ? nextEdge : null;
      const model = predicted[i]!.reply;
      if (!same(model, got))
        mismatches.push(
          `${edge.from} --${e.label}: host ${JSON.stringify(got)}, model ${JSON.stringify(model)}`,
        );
      lines.push(`${edge.from} --${e.label}--> ${edge.to}: ${driver}`);
      if (doneEdge) {
        lines.push(
          `${doneEdge.from} --${nextLabel}--> ${doneEdge.to}: ${nextLabel.startsWith("error:") ? `test hook faults.fail ${nextLabel.slice(6)} + ` : ""}${driver} (reply ${JSON.stringify(got)})`,
        );
      }
      const settled = doneEdge ? doneEdge.to : edge.to;
      const settledState = stateName(settled);
      if (STABLE.has(settledState)) {
        const snapMode = settled.split("|")[1]!;
        for (const p of await checkRows(ctx, settled, { mode: snapMode, state: settledState }))
          mismatches.push(`${edge.from} --${e.label}--> ${settled}: ${p}`);
      }
      if (doneEdge) i++;
    }
    // Probes: events the final state answers without changing state.
    for (let j = 0; j < probes.length; j++) {
      const probe = probes[j]!;
      const { driver, out } = await drive(ctx, probe.event, undefined, !probe.from.includes("|-|"));
      const got = await out;
      const model = predicted[path.length + j]!.reply;
      if (!same(model, got))
        mismatches.push(
          `${probe.from} --${probe.event.label} (probe): host ${JSON.stringify(got)}, model ${JSON.stringify(model)}`,
        );
      lines.push(
        `${probe.from} --${probe.event.label}--> ${probe.to}: ${driver} -> ${got.kind}${got.code ? ` ${got.code}` : ""}`,
      );
    }
    if (held) {
      await hook("faults.release", { step: held.step });
      await held.out;
    }
    // Leave nothing running for the next path.
    await alice.call("session.abort", { sessionId: ctx.sessionId }).catch(() => {});
    return { lines, mismatches };
  }

  return { replay };
}

const stack = useStack("model", { extra: { PI_TURN_LEASE_MS: String(4 * 3600 * 1000) }, host: true });

describe("session machine, model-based, against the real host", () => {
  it("drives every transition of the machine and the host agrees on replies, codes and rows", async () => {
    const { edges, states } = enumerateEdges();
    const initial = [...states.keys()][0]!;
    // The supervisor delivers no request before the actor has read its rows: loading takes only
    // its own done event, so requests in `loading` are not host transitions.
    const relevant = edges.filter((e) => !(stateName(e.from) === "loading" && e.selfLoop));
    const paths = shortestPaths(relevant, initial);
    const replayer = createReplayer(stack);
    const driven = new Map<string, string>();
    const mismatches: string[] = [];
    const key = (e: ModelEdge) => `${e.from} --${e.event.label}--> ${e.to}`;

    // One run per state: the path to it, then every probe (self-loop) it answers.
    for (const [state, path] of paths) {
      const probes = relevant.filter((e) => e.from === state && e.selfLoop);
      if (path.length === 0) continue;
      const r = await replayer.replay(path, probes);
      mismatches.push(...r.mismatches);
      for (const line of r.lines) driven.set(line.split(": ")[0]!, line);
    }
    // Then every move not yet driven as part of a path.
    for (const e of relevant.filter((x) => !x.selfLoop)) {
      if (driven.has(key(e))) continue;
      const base = paths.get(e.from);
      if (!base) continue;
      const r = await replayer.replay([...base, e], []);
      mismatches.push(...r.mismatches);
      for (const line of r.lines) driven.set(line.split(": ")[0]!, line);
    }

    const report = relevant.map((e) => driven.get(key(e)) ?? `${key(e)}: NOT DRIVEN`);
    console.log(
      `session machine: ${relevant.length} transitions over ${states.size} states\n${report.join("\n")}`,
    );
    expect(mismatches).toEqual([]);
    expect(report.filter((l) => l.endsWith("NOT DRIVEN"))).toEqual([]);
    expect(relevant.filter((e) => driven.has(key(e))).length).toBe(relevant.length);
  }, 240_000);
});

describe("a deliberately broken host guard", () => {
  const broken = useStack("broken", {
    extra: { PI_TURN_LEASE_MS: String(4 * 3600 * 1000), PI_TEST_BREAK_GUARD: "prompt-while-parked" },
    host: true,
  });

  it("makes the replayed path 'prompt while a plan is pending' fail", async () => {
    const { edges, states } = enumerateEdges();
    const initial = [...states.keys()][0]!;
    const paths = shortestPaths(edges, initial);
    const parked = [...paths.keys()].find((s) => s.startsWith('"parked"|plan|prompt'))!;
    const probe = edges.find((e) => e.from === parked && e.event.label === "PROMPT")!;
    expect(probe.selfLoop).toBe(true);
    const r = await createReplayer(broken).replay(paths.get(parked)!, [probe]);
    expect(r.mismatches.join("\n")).toMatch(
      /PROMPT \(probe\): host .*model \{"kind":"fail","code":"AGENT_BUSY"\}/,
    );
  });
});
