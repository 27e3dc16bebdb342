// Benchmark (not a test): the plan approval path through the real host, next to two references
// measured in the same run and interleaved with it sample by sample:
//   submit  = tools.execute ExitPlanMode (artifact file + pending row + recorded tool call), the bench
//             acting as the agent worker holding the Plan turn;
//   approve = plans.resolve (approve, accept-edits) until the execution's claim has made it
//             `running` (the bench is the worker: it takes the offer and claims).
// References: (1) one bare Postgres transaction with the same SQL statements the host runs for the
// operation (no NATS, no actor, no file); (2) the durable human wait a team would otherwise use,
// DBOS Transact: starting a workflow until it waits in `recv()` (next to submit), and `send()` to
// that workflow until it has finished (next to approve). DBOS gets its own fresh system database on
// the same Postgres. Run: `npm run bench:approval` (needs Postgres and NATS like the tests; BENCH_N
// sets the sample count, default 300).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { DBOS } from "@dbos-inc/dbos-sdk";
import type pg from "pg";
import { decodeJson } from "../services/protocol/envelope.ts";
import type { TurnOffer } from "../services/protocol/schemas.ts";
import { agentSubject } from "../services/protocol/subjects.ts";
import { unwrap } from "../services/protocol/result.ts";
import { writePlanArtifact } from "../services/host/tools/plan-artifact.ts";
import { createStack } from "../tests/support/stack.ts";
import { createTestDatabase } from "../tests/support/test-db.ts";
import { type Stats, stats } from "./bench-support.ts";

const N = Number(process.env.BENCH_N || 300);
const WARMUP = Math.min(30, Math.max(5, Math.floor(N / 10)));
const PLAN_MARKDOWN = "# Bench plan\n\n1. Write a file.\n2. Report.\n";

async function timed<T>(out: number[] | null, fn: () => Promise<T>): Promise<T> {
  const t = performance.now();
  const v = await fn();
  out?.push(performance.now() - t);
  return v;
}

// ---- the same SQL the host runs (services/host/agent-api.ts, plan-store.ts, session-store.ts) ----

const SESSION_SELECT = `SELECT s.id, s.project_id, s.title, s.owner, s.approvers, s.mode, s.permission_mode, s.provider, s.model,
  s.model_config, s.version, s.created_at, s.updated_at, p.workspace_root
  FROM sessions s JOIN projects p ON p.id = s.project_id`;

async function inTx(pool: pg.Pool, fn: (c: pg.PoolClient) => Promise<void>): Promise<void> {
  const c = await pool.connect();
  try {
    await c.query("BEGIN");
    await fn(c);
    await c.query("COMMIT");
  } catch (err) {
    await c.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    c.release();
  }
}

const audit = (c: pg.PoolClient, sessionId: string, turnId: string, action: string, details: object) =>
  c.query(
    `INSERT INTO audit_log (at, principal, session_id, turn_id, tool_call_id, action, decision, code, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [new Date(), "alice", sessionId, turnId, null, action, null, null, JSON.stringify(details)],
  );

/** Submit: the tools.execute read, plans.submit's reads, the row + audit, the recorded tool call. */
async function submitStatements(pool: pg.Pool, i: number): Promise<void> {
  const sessionId = `refs_${i}`;
  const turnId = `reft_${i}`;
  const now = new Date();
  await inTx(pool, async (c) => {
    await c.query(
      `SELECT s.mode, s.permission_mode, s.owner, s.approvers, p.workspace_root,
              (SELECT value->>'permissionMode' FROM app_settings WHERE key = 'defaults') AS app_permission,
              (SELECT result FROM tool_calls WHERE turn_id = $2 AND tool_call_id = $3) AS recorded
       FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = $1`,
      [sessionId, turnId, "exit"],
    );
    await c.query(`${SESSION_SELECT} WHERE s.id = $1`, [sessionId]);
    await c.query("SELECT 1 FROM plan_approvals WHERE session_id = $1 AND status = 'pending'", [sessionId]);
    await c.query(`${SESSION_SELECT} WHERE s.id = $1 FOR UPDATE OF s`, [sessionId]);
    await c.query(
      `INSERT INTO plan_approvals (id, request_id, session_id, turn_id, tool_call_id, title, question, markdown,
         artifact_path, artifact_sha256, artifact_size, status, created_at, deadline, version)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13, 0)`,
      [
        `refp_${i}`,
        `refq_${i}`,
        sessionId,
        turnId,
        "exit",
        `Reference ${i}`,
        "Go?",
        PLAN_MARKDOWN,
        `.pi/plan/reference-${i}.md`,
        "0".repeat(64),
        Buffer.byteLength(PLAN_MARKDOWN),
        now,
        new Date(now.getTime() + 30 * 60_000),
      ],
    );
    await audit(c, sessionId, turnId, "plan.submit", { proposalId: `refp_${i}` });
    const result = { content: [{ type: "text", text: "Plan submitted" }], isError: false, terminate: true };
    await c.query(
      `INSERT INTO tool_calls (turn_id, tool_call_id, session_id, tool, decision, code, result, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [turnId, "exit", sessionId, "ExitPlanMode", "allow", null, JSON.stringify(result), now],
    );
    await c.query(
      "INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at) VALUES ($1, $2, $3, $4, $5)",
      [
        sessionId,
        turnId,
        "toolResult",
        JSON.stringify({ role: "toolResult", toolCallId: "exit", ...result }),
        now,
      ],
    );
    await audit(c, sessionId, turnId, "tool.decision", { tool: "ExitPlanMode" });
  });
}

/** Approve + claim: plans.get, the approve transaction's statements, the claim's read and update. */
async function approveStatements(pool: pg.Pool, i: number): Promise<void> {
  const sessionId = `refs_${i}`;
  const turnId = `reft_${i}`;
  const proposalId = `refp_${i}`;
  const execTurn = `refx_${i}`;
  const now = new Date();
  await inTx(pool, async (c) => {
    await c.query(
      `SELECT a.*, p.workspace_root, s.owner, s.approvers FROM plan_approvals a
       JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id WHERE a.id = $1`,
      [proposalId],
    );
    const row = (await c.query("SELECT * FROM plan_approvals WHERE id = $1 FOR UPDATE", [proposalId]))
      .rows[0];
    await c.query(`${SESSION_SELECT} WHERE s.id = $1 FOR UPDATE OF s`, [sessionId]);
    await c.query(
      "UPDATE turns SET status = $2, error_code = $3, ended_at = $4 WHERE id = $1 AND status = 'running'",
      [turnId, "completed", null, now],
    );
    await c.query(
      `UPDATE plan_approvals SET execution_state = $2, error_code = coalesce($3, error_code), version = version + 1
       WHERE execution_turn_id = $1 AND execution_state IN ('queued', 'running')`,
      [turnId, "completed", null],
    );
    await c.query(
      "INSERT INTO turns (id, session_id, kind, status, created_at, idempotency_key, proposal_id) VALUES ($1, $2, $3, 'running', $4, $5, $6)",
      [execTurn, sessionId, "execution", now, null, proposalId],
    );
    await c.query(
      "INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at) VALUES ($1, $2, $3, $4, $5)",
      [sessionId, execTurn, "user", JSON.stringify({ role: "user", content: PLAN_MARKDOWN }), now],
    );
    const u = await c.query(
      `UPDATE plan_approvals SET status = 'approved', action = 'approve', target_permission_mode = $2, resolved_at = $3,
         resolved_by = $4, version = version + 1, execution_id = $5, execution_state = 'queued', execution_turn_id = $6
       WHERE id = $1 AND status = 'pending' AND version = $7 RETURNING *`,
      [proposalId, "accept-edits", now, "alice", `refe_${i}`, execTurn, row.version],
    );
    await c.query(
      "UPDATE sessions SET mode = 'agent', permission_mode = $2, version = version + 1, updated_at = $3 WHERE id = $1",
      [sessionId, "accept-edits", now],
    );
    await audit(c, sessionId, turnId, "plan.approve", { proposalId });
    // The claim: its read, the version-checked queued -> running, its audit, the assignment's reads.
    await c.query(
      `SELECT a.*, p.workspace_root FROM plan_approvals a JOIN sessions s ON s.id = a.session_id JOIN projects p ON p.id = s.project_id
       WHERE a.execution_turn_id = $1`,
      [execTurn],
    );
    await c.query(
      "UPDATE plan_approvals SET execution_state = 'running', version = version + 1 WHERE id = $1 AND execution_state = 'queued' AND version = $2",
      [proposalId, u.rows[0].version],
    );
    await audit(c, sessionId, execTurn, "plan.execution.start", { proposalId });
    await c.query("SELECT id, execution_id FROM plan_approvals WHERE execution_turn_id = $1", [execTurn]);
    await c.query(`${SESSION_SELECT} WHERE s.id = $1`, [sessionId]);
  });
}

type Stack = Awaited<ReturnType<typeof createStack>>;

/** The turn offers the host publishes (the bench is the only worker: it sees every one). */
function offerQueue(stack: Stack) {
  const offers: TurnOffer[] = [];
  const waiters: Array<{ pred: (o: TurnOffer) => boolean; resolve: (o: TurnOffer) => void }> = [];
  const sub = stack.nc.subscribe(agentSubject(stack.env.prefix, "offer"), {
    callback: (_e, m) => {
      const o = decodeJson(m.data) as TurnOffer;
      const w = waiters.find((x) => x.pred(o));
      if (w) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(o);
      } else offers.push(o);
    },
  });
  const next = (pred: (o: TurnOffer) => boolean): Promise<TurnOffer> => {
    const i = offers.findIndex(pred);
    if (i >= 0) return Promise.resolve(offers.splice(i, 1)[0]!);
    return new Promise((resolve) => waiters.push({ pred, resolve }));
  };
  return { next, stop: () => sub.unsubscribe() };
}

/** Reference rows: one Plan session with a running turn per sample, in bulk. */
async function seedReferenceRows(stack: Stack, projectId: string, total: number): Promise<void> {
  await stack.db.pool.query(
    `INSERT INTO sessions (id, project_id, title, owner, approvers, mode, permission_mode, provider, model, model_config, version, created_at, updated_at)
     SELECT 'refs_' || g, $1, '', 'alice', '{}', 'plan', 'inherit', 'scripted', 'demo', '{}'::jsonb, 0, now(), now() FROM generate_series(0, $2 - 1) g`,
    [projectId, total],
  );
  await stack.db.pool.query(
    `INSERT INTO turns (id, session_id, kind, status, created_at) SELECT 'reft_' || g, 'refs_' || g, 'prompt', 'running', now()
     FROM generate_series(0, $1 - 1) g`,
    [total],
  );
}

/** DBOS: a workflow that announces it is waiting, then waits for the person's answer in recv(). */
async function launchDbos(systemDatabaseUrl: string) {
  async function waitForApproval(): Promise<string> {
    await DBOS.setEvent("waiting", true);
    return (await DBOS.recv<string>("approval", 600)) ?? "timeout";
  }
  const workflow = DBOS.registerWorkflow(waitForApproval, { name: "waitForApproval" });
  DBOS.setConfig({ name: "pihost-bench", systemDatabaseUrl, logLevel: "error" });
  await DBOS.launch();
  return workflow;
}

function newSamples() {
  return {
    hostSubmit: [] as number[],
    hostApprove: [] as number[],
    pgSubmit: [] as number[],
    pgApprove: [] as number[],
    dbosStart: [] as number[],
    dbosSend: [] as number[],
    // Where the host's time goes (same samples as hostSubmit / hostApprove, or in-process).
    fileWrite: [] as number[],
    resolveReply: [] as number[],
    offerToClaim: [] as number[],
  };
}
type Samples = ReturnType<typeof newSamples>;

interface Bench {
  stack: Stack;
  projectId: string;
  offers: ReturnType<typeof offerQueue>;
  workflow: Awaited<ReturnType<typeof launchDbos>>;
  scratch: string;
  samples: Samples;
}

const claim = (b: Bench, turnId: string) => b.stack.agentClient.call("claim", { turnId, workerId: "bench" });

/** The host's submit and approve, on a Plan session whose turn the bench holds as the worker. */
async function hostSample(b: Bench, i: number, pick: (s: number[]) => number[] | null): Promise<void> {
  const alice = b.stack.client("alice");
  const session = await alice.call("session.create", { projectId: b.projectId, mode: "plan" });
  const { turnId } = await alice.call("session.prompt", {
    sessionId: session.id,
    text: "plan",
  });
  await b.offers.next((o) => o.turnId === turnId);
  const a = await claim(b, turnId);

  const submitted = await timed(pick(b.samples.hostSubmit), () =>
    b.stack.agentClient.call("tools.execute", {
      sessionId: session.id,
      turnId,
      token: a.token,
      toolCallId: "exit",
      tool: "ExitPlanMode",
      args: { title: `Bench plan ${i}`, markdown: PLAN_MARKDOWN, question: "Go?" },
      batch: [{ toolCallId: "exit", tool: "ExitPlanMode" }],
    }),
  );
  const proposalId = (submitted.details as { proposalId?: string } | undefined)?.proposalId;
  if (submitted.isError || !proposalId) throw new Error(`submit failed: ${JSON.stringify(submitted)}`);

  const exec = await timed(pick(b.samples.hostApprove), async () => {
    const t0 = performance.now();
    const view = await alice.call("plans.resolve", {
      proposalId,
      sessionId: session.id,
      turnId,
      toolCallId: "exit",
      action: "approve",
      targetPermissionMode: "accept-edits",
    });
    if (view.executionState !== "queued") throw new Error(`approve: ${JSON.stringify(view)}`);
    const t1 = performance.now();
    const offer = await b.offers.next((o) => o.sessionId === session.id && o.kind === "execution");
    const t2 = performance.now();
    const assignment = await claim(b, offer.turnId);
    pick(b.samples.resolveReply)?.push(t1 - t0);
    pick(b.samples.offerToClaim)?.push(performance.now() - t2);
    return assignment;
  });
  // Untimed: end the execution turn so the session is idle and holds no lease.
  await b.stack.agentClient.call("turn.end", { turnId: exec.turnId, token: exec.token, status: "completed" });
}

/** The references of one sample: the plan file alone, bare transactions, DBOS. */
async function referenceSample(b: Bench, i: number, pick: (s: number[]) => number[] | null): Promise<void> {
  // The plan file alone, in process: exclusive create, write, fsync of the file and its folder.
  await timed(pick(b.samples.fileWrite), async () =>
    unwrap(
      await writePlanArtifact({
        workspaceRoot: b.scratch,
        title: `Bench plan ${i}`,
        markdown: PLAN_MARKDOWN,
        now: new Date(),
      }),
    ),
  );
  // Reference 1: the same statements as one bare transaction each.
  await timed(pick(b.samples.pgSubmit), () => submitStatements(b.stack.db.pool, i));
  await timed(pick(b.samples.pgApprove), () => approveStatements(b.stack.db.pool, i));
  // Reference 2: DBOS start a durable wait, then send() the answer to it.
  const handle = await timed(pick(b.samples.dbosStart), async () => {
    const h = await DBOS.startWorkflow(b.workflow)();
    if (!(await DBOS.getEvent<boolean>(h.workflowID, "waiting", 30))) throw new Error("DBOS: not waiting");
    return h;
  });
  await timed(pick(b.samples.dbosSend), async () => {
    await DBOS.send(handle.workflowID, "approve", "approval");
    if ((await handle.getResult()) !== "approve") throw new Error("DBOS: wrong result");
  });
}

function report(samples: Samples): string {
  const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, stats(v)])) as Record<
    keyof Samples,
    Stats
  >;
  const ms = (x: number) => `${x.toFixed(2)} ms`.padStart(10);
  const ratio = (a: number, b: number) => `${(a / b).toFixed(1)}x`.padStart(7);
  const line = (name: string, x: Stats, pgRef?: Stats, dbosRef?: Stats) =>
    `${name.padEnd(52)}${ms(x.p50)}${ms(x.p99)}` +
    (pgRef && dbosRef
      ? `${ratio(x.p50, pgRef.p50)}${ratio(x.p99, pgRef.p99)}${ratio(x.p50, dbosRef.p50)}${ratio(x.p99, dbosRef.p99)}`
      : "");
  return [
    `plan approval path, n=${N} samples each (after ${WARMUP} warm-up), interleaved, ${new Date().toISOString()}`,
    `${"case".padEnd(52)}${"p50".padStart(10)}${"p99".padStart(10)}${"p50/pg".padStart(7)}${"p99/pg".padStart(7)}${"p50/db".padStart(7)}${"p99/db".padStart(7)}`,
    line("submit: host, tools.execute ExitPlanMode", s.hostSubmit, s.pgSubmit, s.dbosStart),
    line("  part: the plan file alone (in process)", s.fileWrite),
    line("  ref: bare Postgres tx, same statements", s.pgSubmit),
    line("  ref: DBOS start workflow until waiting in recv()", s.dbosStart),
    line("approve: host, plans.resolve -> execution running", s.hostApprove, s.pgApprove, s.dbosSend),
    line("  part: plans.resolve request -> reply", s.resolveReply),
    line("  part: offer received -> claim reply (running)", s.offerToClaim),
    line("  ref: bare Postgres tx, same statements", s.pgApprove),
    line("  ref: DBOS send() -> recv() -> workflow done", s.dbosSend),
  ].join("\n");
}

async function main() {
  const stack = await createStack("benchappr");
  const dbosDb = await createTestDatabase("dbos_sys");
  let dbosLaunched = false;
  try {
    const host = await stack.startHost();
    const ws = stack.newWorkspace("bench");
    const project = await stack.client("alice").call("projects.create", { name: "bench", workspaceRoot: ws });
    const offers = offerQueue(stack);
    const total = N + WARMUP;
    await seedReferenceRows(stack, project.id, total);
    const workflow = await launchDbos(dbosDb.url);
    dbosLaunched = true;
    const samples = newSamples();
    const b: Bench = {
      stack,
      projectId: project.id,
      offers,
      workflow,
      scratch: stack.newWorkspace("scratch"),
      samples,
    };
    for (let i = 0; i < total; i++) {
      const pick = (s: number[]) => (i >= WARMUP ? s : null);
      await hostSample(b, i, pick);
      await referenceSample(b, i, pick);
    }
    offers.stop();
    // A graceful stop, so a host started with PIHOST_CPU_PROF_DIR writes its profile.
    await host.stop();
    const out = report(samples);
    console.log(out);
    if (process.env.BENCH_OUT) writeFileSync(path.resolve(process.env.BENCH_OUT), `${out}\n`);
  } finally {
    if (dbosLaunched) await DBOS.shutdown().catch(() => {});
    await dbosDb.drop().catch(() => {});
    await stack.close();
  }
}

await main();
process.exit(0);
