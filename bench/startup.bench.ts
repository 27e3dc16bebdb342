// Benchmark (not a test): how long the host and the worker take from spawn to ready (`host.ready`,
// `worker.ready`) and their memory then (VmHWM, the peak resident set), run from the production
// build (`node dist/host.js`, `npm run build` first) beside the sources under tsx, in turn, one
// process at a time, in development mode on the local Postgres and NATS. `npm run bench:startup`;
// BENCH_N runs of each (default 7).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { createTestDatabase } from "../tests/support/test-db.ts";
import { stats } from "./bench-support.ts";

const N = Number(process.env.BENCH_N || 7);
const ROOT = path.resolve(import.meta.dirname, "..");
const NATS_URL = process.env.NATS_URL || "nats://127.0.0.1:4222";

const variants = {
  "host, built": ["dist/host.js", "host.ready"],
  "host, tsx": ["--import", "tsx", "services/host/main.ts", "host.ready"],
  "worker, built": ["dist/agent.js", "worker.ready"],
  "worker, tsx": ["--import", "tsx", "services/agent/main.ts", "worker.ready"],
} as const;

/** One start: ms to the ready line, and VmHWM (MiB) read right then; then SIGTERM and wait. */
function once(args: readonly string[], env: Record<string, string>): Promise<{ ms: number; mib: number }> {
  const ready = args.at(-1)!;
  const t = performance.now();
  const child: ChildProcess = spawn(process.execPath, args.slice(0, -1), {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  return new Promise((resolve, reject) => {
    let buf = "";
    let seen: { ms: number; mib: number } | null = null;
    child.stdout!.setEncoding("utf8").on("data", (d: string) => {
      buf += d;
      if (seen || !buf.includes(`"event":"${ready}"`)) return;
      const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1];
      seen = { ms: performance.now() - t, mib: Number(hwm) / 1024 };
      child.kill("SIGTERM");
    });
    child.once("exit", (code) =>
      seen ? resolve(seen) : reject(new Error(`${args.join(" ")} exited ${code} before ${ready}`)),
    );
  });
}

async function main() {
  const db = await createTestDatabase("benchstartup");
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-bench-startup-"));
  const env = {
    DATABASE_URL: db.url,
    NATS_URL,
    PI_DEV_MODE: "1",
    PI_PREFIX: `bstart${process.pid}`,
    PI_DATA_DIR: path.join(dir, "data"),
    PI_WORKSPACE_ROOTS: dir,
    PI_STREAM_MAX_BYTES: String(8 * 1024 * 1024),
    PI_HTTP_LISTEN: "off",
    // A restart with the same id after a clean stop does not wait (docs/operations.md).
    PI_HOST_LEASE_MS: "1500",
    PI_HOST_HEARTBEAT_MS: "300",
  };
  const samples = new Map<string, Array<{ ms: number; mib: number }>>();
  try {
    // Warm-up (migrations, the file helper's bundle), then the variants in turn, N rounds.
    for (const args of Object.values(variants)) await once(args, env);
    for (let i = 0; i < N; i++)
      for (const [name, args] of Object.entries(variants))
        samples.set(name, [...(samples.get(name) ?? []), await once(args, env)]);
    console.log(`node ${process.version}, ${os.availableParallelism()} cores, n = ${N} each`);
    for (const [name, s] of samples) {
      const ms = stats(s.map((x) => x.ms));
      const mib = stats(s.map((x) => x.mib));
      console.log(
        `${name.padEnd(14)} ready p50 ${ms.p50.toFixed(0)} ms (max ${ms.max.toFixed(0)}), VmHWM p50 ${mib.p50.toFixed(1)} MiB (max ${mib.max.toFixed(1)})`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await db.drop();
  }
}

await main();
