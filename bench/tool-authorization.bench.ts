// Benchmark (not a test): tools.execute latency through the real host for a denied Write in Plan
// and an allowed Read, each next to its floor measured in the same run: F1 (what a refusal must
// cost) = a bare NATS request/reply plus one committed INSERT; F2 (what an allowed call must cost) =
// a NATS request/reply plus two committed INSERTs (the start row and the record) plus one round trip
// to a warm file helper. Run: `npm run bench` (needs Postgres and NATS like the tests; BENCH_N).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import type { TurnOffer } from "../services/protocol/schemas.ts";
import { agentSubject } from "../services/protocol/subjects.ts";
import { createFileHelpers } from "../services/host/tools/file-helper/file-helpers.ts";
import { sandboxSettingsFromEnv } from "../services/host/tools/sandbox.ts";
import { hostEnv } from "../tests/support/processes.ts";
import { createStack } from "../tests/support/stack.ts";
import { interleaved, type Stats, stats } from "./bench-support.ts";

const N = Number(process.env.BENCH_N || 2000);
/** Calls of one case before the next case takes its turn. */
const BLOCK = 100;

async function main() {
  const stack = await createStack("bench");
  try {
    const host = await stack.startHost();
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("bench");
    writeFileSync(path.join(ws, "a.txt"), "hello\n");
    const project = await alice.call("projects.create", { name: "bench", workspaceRoot: ws });
    const session = await alice.call("session.create", { projectId: project.id, mode: "plan" });
    const offers = stack.nc.subscribe(agentSubject(stack.env.prefix, "offer"));
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "bench",
    });
    for await (const m of offers) if ((decodeJson(m.data) as TurnOffer).turnId === turnId) break;
    offers.unsubscribe();
    const a = await stack.agentClient.call("claim", { turnId, workerId: "bench" });
    const exec = (tool: string, args: Record<string, unknown>, id: string) =>
      stack.agentClient.call("tools.execute", {
        sessionId: a.sessionId,
        turnId,
        token: a.token,
        toolCallId: id,
        tool,
        args,
        batch: [{ toolCallId: id, tool }],
      });

    // Floors: a bare NATS echo responder, a bare committed INSERT and a warm file helper's round
    // trip (a Read of the same file by the same sandboxed helper code, in this process), in this run.
    const echo = stack.nc.subscribe(`${stack.env.prefix}.bench.echo`, {
      callback: (_e, m) => {
        m.respond(m.data);
      },
    });
    const body = encodeJson({ hello: "world" });
    await stack.db.pool.query("CREATE TABLE bench_floor (id bigserial PRIMARY KEY, v text NOT NULL)");
    const helpers = createFileHelpers({
      ...sandboxSettingsFromEnv(hostEnv(stack.env)),
      dataDir: path.join(stack.dir, "floor"),
    });
    const cases = {
      nats: () => stack.nc.request(`${stack.env.prefix}.bench.echo`, body),
      insert: () => stack.db.pool.query("INSERT INTO bench_floor (v) VALUES ($1)", ["x"]),
      helper: () => helpers.call("floor", ws, { op: "tool", tool: "Read", args: { path: "a.txt" } }),
      denied: (i: number) => exec("Write", { path: "x.txt", content: "x" }, `deny-${i}`),
      read: (i: number) => exec("Read", { path: "a.txt" }, `read-${i}`),
    };
    // Warm-up, then every case in turns of BLOCK calls: the floors and the host's calls are timed
    // in the same moments, so a machine that slows down in between moves both.
    await interleaved(100, 100, {
      ...cases,
      denied: (i) => cases.denied(N + i),
      read: (i) => cases.read(N + i),
    });
    const samples = await interleaved(N, BLOCK, cases);
    echo.unsubscribe();
    await helpers.close();
    const [nats, insert, helper, denied, read] = [
      samples.nats,
      samples.insert,
      samples.helper,
      samples.denied,
      samples.read,
    ].map(stats) as [Stats, Stats, Stats, Stats, Stats];
    const f1 = { p50: nats.p50 + insert.p50, p99: nats.p99 + insert.p99 };
    const f2 = {
      p50: nats.p50 + 2 * insert.p50 + helper.p50,
      p99: nats.p99 + 2 * insert.p99 + helper.p99,
    };
    const row = (name: string, s: { p50: number; p99: number }, floor: { p50: number; p99: number }) =>
      `${name.padEnd(44)} p50 ${s.p50.toFixed(3).padStart(7)} ms  p99 ${s.p99.toFixed(3).padStart(7)} ms  ratio p50 ${(s.p50 / floor.p50).toFixed(2).padStart(5)}x  p99 ${(s.p99 / floor.p99).toFixed(2).padStart(5)}x`;
    console.log(`tools.execute authorization, n=${N} sequential requests each, ${new Date().toISOString()}`);
    console.log(
      `parts: NATS request/reply p50 ${nats.p50.toFixed(3)} ms, committed INSERT p50 ${insert.p50.toFixed(3)} ms, file helper round trip p50 ${helper.p50.toFixed(3)} ms`,
    );
    console.log(row("F1: NATS round trip + 1 committed INSERT", f1, f1));
    console.log(row("denied Write in Plan (against F1)", denied, f1));
    console.log(row("F2: NATS + 2 committed INSERTs + helper", f2, f2));
    console.log(row("allowed Read (against F2)", read, f2));
    // A graceful stop, so a host started with PIHOST_CPU_PROF_DIR writes its profile.
    await host.stop();
  } finally {
    await stack.close();
  }
}

await main();
process.exit(0);
