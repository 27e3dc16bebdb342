// Benchmark (not a test): what a second and a third host process buy on this machine. One database,
// one subject prefix, hosts with distinct PI_HOST_ID started one after another (1, then 2, then 3
// running); each phase creates its own sessions, which land on the hosts through the service's
// queue group (a request reaching another host is forwarded to the owner). Two workloads per phase,
// each at a fixed concurrency high enough to saturate the machine:
//   authorization: tools.execute of a Write in Plan (denied), the bench acting as the worker;
//   plan cycle:    session.prompt -> plan submitted -> plans.resolve approve -> execution turn ended,
//                  with two scripted-model worker processes.
// The floor (a bare NATS request/reply plus a primary-key SELECT, at the same concurrency) is
// measured in the same run. Run: `npm run bench:scale` (needs Postgres and NATS like the tests;
// BENCH_AUTH_N calls and BENCH_PLAN_N cycles per phase, BENCH_ROUNDS rounds of 1, 2, 3 hosts, so a
// change of the machine's load shows as a difference between rounds; os.loadavg() is printed).
import os from "node:os";
import path from "node:path";
import { writeFileSync } from "node:fs";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import type { SessionEvent } from "../services/protocol/events.ts";
import type { ProjectView, SessionView, TurnAssignment, TurnOffer } from "../services/protocol/schemas.ts";
import { agentSubject } from "../services/protocol/subjects.ts";
import { hostEnv, type ManagedProcess, spawnTs, startWorker } from "../tests/support/processes.ts";
import { createStack, type Stack } from "../tests/support/stack.ts";
import { type Stats, stats } from "./bench-support.ts";

const AUTH_N = Number(process.env.BENCH_AUTH_N || 3000);
const PLAN_N = Number(process.env.BENCH_PLAN_N || 120);
/** Sessions per phase for authorization: 2 calls each in flight on average, under PI_TOOLS_MAX_PER_SESSION (4). */
const AUTH_SESSIONS = 16;
const AUTH_CONCURRENCY = 32;
const PLAN_CONCURRENCY = 16;
const WORKERS = 2;
const ROUNDS = Number(process.env.BENCH_ROUNDS || 2);
const HOST_IDS = ["bench-h1", "bench-h2", "bench-h3"];

/** Runs fn `total` times with `concurrency` loops in flight; per-call latencies, wall time, errors. */
async function saturate(
  total: number,
  concurrency: number,
  fn: (i: number) => Promise<unknown>,
): Promise<{ latencies: number[]; wallMs: number; errors: Map<string, number> }> {
  const latencies: number[] = [];
  const errors = new Map<string, number>();
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < total; i = next++) {
        const t = performance.now();
        try {
          await fn(i);
          latencies.push(performance.now() - t);
        } catch (err) {
          const code = (err as { code?: string }).code ?? (err as Error).message.slice(0, 60);
          errors.set(code, (errors.get(code) ?? 0) + 1);
        }
      }
    }),
  );
  return { latencies, wallMs: performance.now() - t0, errors };
}

interface Row {
  name: string;
  perSecond: number;
  s: Stats;
  errors: Map<string, number>;
  spread?: string;
}

function rowOf(name: string, r: Awaited<ReturnType<typeof saturate>>, spread?: string): Row {
  return {
    name,
    perSecond: (r.latencies.length * 1000) / r.wallMs,
    s: stats(r.latencies),
    errors: r.errors,
    spread,
  };
}

function print(rows: Row[], base: Row): void {
  for (const r of rows) {
    const errs = [...r.errors].map(([c, n]) => `${c}=${n}`).join(",") || "none";
    console.log(
      `${r.name.padEnd(30)} ${r.perSecond.toFixed(1).padStart(8)}/s  x${(r.perSecond / base.perSecond).toFixed(2)}  ` +
        `p50 ${r.s.p50.toFixed(2).padStart(7)} ms  p99 ${r.s.p99.toFixed(2).padStart(7)} ms  n=${r.s.n}  errors ${errs}` +
        (r.spread ? `  sessions ${r.spread}` : ""),
    );
  }
}

async function spreadOf(stack: Stack, sessionIds: string[]): Promise<string> {
  const r = await stack.db.pool.query<{ host_id: string; n: string }>(
    "SELECT host_id, count(*) AS n FROM session_leases WHERE session_id = ANY($1) GROUP BY host_id ORDER BY host_id",
    [sessionIds],
  );
  return r.rows.map((x) => `${x.host_id}:${x.n}`).join(" ");
}

/** Floor: a bare NATS echo request plus a primary-key SELECT, per call, at the same concurrency. */
async function floor(stack: Stack, sessionId: string, round: number): Promise<Row> {
  const subject = `${stack.env.prefix}.bench.echo`;
  const echo = stack.nc.subscribe(subject, {
    callback: (_e, m) => {
      m.respond(m.data);
    },
  });
  const body = encodeJson({ hello: "world" });
  const call = async () => {
    await stack.nc.request(subject, body);
    await stack.db.pool.query("SELECT mode FROM sessions WHERE id = $1", [sessionId]);
  };
  await saturate(500, AUTH_CONCURRENCY, call);
  const r = await saturate(AUTH_N, AUTH_CONCURRENCY, call);
  echo.unsubscribe();
  return rowOf(`floor (NATS echo + PK SELECT), r${round}`, r);
}

async function newProject(stack: Stack, name: string): Promise<ProjectView> {
  const ws = stack.newWorkspace(name);
  writeFileSync(path.join(ws, "a.txt"), "hello\n");
  return stack.client("alice").call("projects.create", { name, workspaceRoot: ws });
}

/**
 * AUTH_SESSIONS Plan sessions with a claimed turn each (the bench is their worker), each in a project
 * of its own: the host serializes tool calls per workspace, and the point here is the hosts.
 */
async function claimedTurns(stack: Stack, phase: number) {
  const alice = stack.client("alice");
  const offers = stack.nc.subscribe(agentSubject(stack.env.prefix, "offer"));
  const wanted = new Set<string>();
  const sessions: SessionView[] = [];
  for (let i = 0; i < AUTH_SESSIONS; i++) {
    const project = await newProject(stack, `auth-${phase}-${i}`);
    const session = await alice.call("session.create", { projectId: project.id, mode: "plan" });
    sessions.push(session);
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "bench",
    });
    wanted.add(turnId);
  }
  const turns: TurnAssignment[] = [];
  for await (const m of offers) {
    const { turnId, host } = decodeJson(m.data) as TurnOffer;
    if (!wanted.delete(turnId)) continue;
    // The claim goes to the host the offer names (the session's owner), as a worker sends it.
    turns.push(await stack.agentClient.to(host).call("claim", { turnId, workerId: "bench" }));
    if (wanted.size === 0) break;
  }
  offers.unsubscribe();
  return { sessions, turns };
}

async function authorization(stack: Stack, phase: number, running: number, round: number): Promise<Row> {
  const { sessions, turns } = await claimedTurns(stack, phase);
  const exec = (i: number, tag: string) => {
    const a = turns[i % turns.length]!;
    const id = `${tag}-${i}`;
    return stack.agentClient.to(a.host).call("tools.execute", {
      sessionId: a.sessionId,
      turnId: a.turnId,
      token: a.token,
      toolCallId: id,
      tool: "Write",
      args: { path: "x.txt", content: "x" },
      batch: [{ toolCallId: id, tool: "Write" }],
    });
  };
  await saturate(300, AUTH_CONCURRENCY, (i) => exec(i, `warm${phase}`));
  const r = await saturate(AUTH_N, AUTH_CONCURRENCY, (i) => exec(i, `deny${phase}`));
  return rowOf(
    `authorization, ${running} host${running > 1 ? "s" : ""}, r${round}`,
    r,
    await spreadOf(
      stack,
      sessions.map((s) => s.id),
    ),
  );
}

const PLAN_SCRIPT = [
  {
    toolCalls: [
      {
        name: "ExitPlanMode",
        args: { title: "Bench plan", markdown: "# Bench\n\n1. Reply.\n", question: "Go?" },
      },
    ],
  },
  { text: "Done." },
];

/** One cycle on a fresh Plan session: prompt, plan submitted, approve, execution turn ended. */
async function planCycle(stack: Stack, session: SessionView): Promise<void> {
  const alice = stack.client("alice");
  const events = stack.events(session.id);
  try {
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "plan",
    });
    const awaiting = (await events.waitFor(
      (e) => e.type === "plan.changed" && (e as SessionEvent<"plan.changed">).action === "submitted",
      60_000,
    )) as SessionEvent<"plan.changed">;
    const p = awaiting.proposal!;
    await alice.call("plans.resolve", {
      proposalId: p.proposalId,
      sessionId: session.id,
      turnId: p.turnId,
      toolCallId: p.toolCallId,
      action: "approve",
      targetPermissionMode: "accept-edits",
    });
    const ended = (await events.waitFor(
      (e) => e.type === "turn.ended" && (e as SessionEvent<"turn.ended">).turnId !== turnId,
      60_000,
    )) as SessionEvent<"turn.ended">;
    if (ended.status !== "completed") throw new Error(`execution ${ended.status} ${ended.code ?? ""}`);
  } finally {
    events.stop();
  }
}

async function planCycles(stack: Stack, phase: number, running: number, round: number): Promise<Row> {
  const alice = stack.client("alice");
  const warm = 2 * PLAN_CONCURRENCY;
  const sessions: SessionView[] = [];
  for (let i = 0; i < warm + PLAN_N; i++)
    sessions.push(
      await alice.call("session.create", {
        projectId: (await newProject(stack, `plan-${phase}-${i}`)).id,
        mode: "plan",
        model: { provider: "scripted", model: "script", script: PLAN_SCRIPT },
      }),
    );
  await saturate(warm, PLAN_CONCURRENCY, (i) => planCycle(stack, sessions[i]!));
  const measured = sessions.slice(warm);
  const r = await saturate(PLAN_N, PLAN_CONCURRENCY, (i) => planCycle(stack, measured[i]!));
  return rowOf(
    `plan cycle, ${running} host${running > 1 ? "s" : ""}, r${round}`,
    r,
    await spreadOf(
      stack,
      measured.map((s) => s.id),
    ),
  );
}

const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(" ");

async function main() {
  console.log(
    `scale-out: os.cpus().length = ${os.cpus().length} (${os.cpus()[0]?.model ?? "?"}), load average ${load()}; ` +
      `authorization n=${AUTH_N} at ${AUTH_CONCURRENCY} in flight over ${AUTH_SESSIONS} sessions; plan cycles ` +
      `n=${PLAN_N} at ${PLAN_CONCURRENCY} in flight; ${WORKERS} workers; ${ROUNDS} rounds of 1, 2, 3 hosts`,
  );
  const stack = await createStack("scale");
  // Turns the bench claims are never heartbeated: keep their lease longer than the run. The hosts
  // heartbeat at the production defaults (the test stacks' 300 ms would charge each extra host more).
  // The health listener's default port would collide between hosts on one machine.
  stack.env.extra = {
    PI_TURN_LEASE_MS: "600000",
    PI_HOST_LEASE_MS: "15000",
    PI_HOST_HEARTBEAT_MS: "2000",
    PI_HTTP_LISTEN: "off",
    PI_WORKER_CONCURRENCY: "8",
  };
  const hosts: Array<ManagedProcess | null> = HOST_IDS.map(() => null);
  const auth: Row[] = [];
  const plan: Row[] = [];
  const floors: Row[] = [];
  let phase = 0;
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [i, id] of HOST_IDS.entries()) {
        const running = i + 1;
        if (!hosts[i]) {
          const host = spawnTs("services/host/main.ts", { ...hostEnv(stack.env), PI_HOST_ID: id });
          hosts[i] = host;
          await host.waitForEvent("host.ready", 60_000);
        }
        phase++;
        if (running === 1) {
          const project = await newProject(stack, `floor-${round}`);
          const s = await stack.client("alice").call("session.create", {
            projectId: project.id,
            mode: "plan",
          });
          floors.push(await floor(stack, s.id, round));
        }
        auth.push(await authorization(stack, phase, running, round));
        const workers = Array.from({ length: WORKERS }, () => startWorker(stack.env));
        await Promise.all(workers.map((w) => w.waitForEvent("worker.ready", 60_000)));
        plan.push(await planCycles(stack, phase, running, round));
        await Promise.all(workers.map((w) => w.stop()));
        console.log(`round ${round}, ${running} host(s) done; load average ${load()}`);
      }
      // Back to one host for the next round: a stopped host's sessions go to the others at once.
      for (let i = HOST_IDS.length - 1; i >= 1 && round < ROUNDS; i--) {
        await hosts[i]?.stop(15_000);
        hosts[i] = null;
      }
    }
    console.log("");
    print([...floors, ...auth], auth[0]!);
    print(plan, plan[0]!);
  } finally {
    await Promise.all(hosts.map((h) => h?.kill()));
    await stack.close();
  }
}

await main();
process.exit(0);
