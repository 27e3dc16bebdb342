// Benchmark (not a test): tools.execute latency through the real host for a denied Write in Plan
// and an allowed Read, next to the raw floor measured in the same run: a bare NATS request/reply
// plus a bare primary-key SELECT. Run: `npm run bench` (needs Postgres and NATS like the tests).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import type { ProjectView, SessionView, TurnAssignment, TurnOffer } from "../services/protocol/schemas.ts";
import { agentSubject } from "../services/protocol/subjects.ts";
import { createStack } from "../tests/support/stack.ts";
import { stats, time } from "./bench-support.ts";

const N = Number(process.env.BENCH_N || 2000);

async function main() {
  const stack = await createStack("bench");
  try {
    await stack.startHost();
    const alice = stack.rpc("alice");
    const ws = stack.newWorkspace("bench");
    writeFileSync(path.join(ws, "a.txt"), "hello\n");
    const project = await alice.call<ProjectView>("projects.create", { name: "bench", workspaceRoot: ws });
    const session = await alice.call<SessionView>("session.create", { projectId: project.id, mode: "plan" });
    const offers = stack.nc.subscribe(agentSubject(stack.env.prefix, "offer"));
    const { turnId } = await alice.call<{ turnId: string }>("session.prompt", {
      sessionId: session.id,
      text: "bench",
    });
    for await (const m of offers) if ((decodeJson(m.data) as TurnOffer).turnId === turnId) break;
    offers.unsubscribe();
    const a = await stack.agent.call<TurnAssignment>("claim", { turnId, workerId: "bench" });
    const exec = (tool: string, args: Record<string, unknown>, id: string) =>
      stack.agent.call("tools.execute", {
        sessionId: a.sessionId,
        turnId,
        token: a.token,
        toolCallId: id,
        tool,
        args,
        batch: [{ toolCallId: id, tool }],
      });

    // Floor: a bare NATS echo responder and a bare primary-key SELECT, in this same run.
    const echo = stack.nc.subscribe(`${stack.env.prefix}.bench.echo`, {
      callback: (_e, m) => {
        m.respond(m.data);
      },
    });
    const body = encodeJson({ hello: "world" });
    await time(200, () => stack.nc.request(`${stack.env.prefix}.bench.echo`, body));
    const nats = stats(await time(N, () => stack.nc.request(`${stack.env.prefix}.bench.echo`, body)));
    const pg = stats(
      await time(N, () => stack.db.pool.query("SELECT mode FROM sessions WHERE id = $1", [session.id])),
    );
    echo.unsubscribe();

    await time(100, (i) => exec("Read", { path: "a.txt" }, `warm-${i}`));
    const denied = stats(await time(N, (i) => exec("Write", { path: "x.txt", content: "x" }, `deny-${i}`)));
    const read = stats(await time(N, (i) => exec("Read", { path: "a.txt" }, `read-${i}`)));
    const floor = { p50: nats.p50 + pg.p50, p99: nats.p99 + pg.p99 };
    const row = (name: string, s: { p50: number; p99: number }) =>
      `${name.padEnd(34)} p50 ${s.p50.toFixed(3).padStart(7)} ms  p99 ${s.p99.toFixed(3).padStart(7)} ms  ratio p50 ${(s.p50 / floor.p50).toFixed(1).padStart(5)}x  p99 ${(s.p99 / floor.p99).toFixed(1).padStart(5)}x`;
    console.log(`tools.execute authorization, n=${N} sequential requests each`);
    console.log(
      `floor: NATS request/reply p50 ${nats.p50.toFixed(3)} ms + PK SELECT p50 ${pg.p50.toFixed(3)} ms`,
    );
    console.log(row("floor (NATS round trip + PK SELECT)", floor));
    console.log(row("denied Write in Plan", denied));
    console.log(row("allowed Read", read));
  } finally {
    await stack.close();
  }
}

await main();
process.exit(0);
