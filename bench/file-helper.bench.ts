// Benchmark (not a test): what running the file tools in the file helper costs (a warm sandboxed
// node process per session and workspace, as the sandbox user), next to the same tools run
// in-process by workspace-files.ts (the host's way before the helper; its Grep now spawns rg too)
// and to a bare bubblewrap start running /bin/true with the same system binds, all measured in the
// same run; plus a session's first call (a cold helper). Run as root: `npm run bench:file-helper`.
import { execFile } from "node:child_process";
import { chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { createFileHelpers } from "../services/host/tools/file-helper/file-helpers.ts";
import { helperBundle } from "../services/host/tools/file-helper/helper-bundle.ts";
import {
  deviceBinds,
  findProgram,
  lookupSandboxUser,
  sandboxSettingsFromEnv,
  systemBinds,
} from "../services/host/tools/sandbox.ts";
import { type FileToolName, runFileTool } from "../services/host/tools/workspace-files.ts";
import { time } from "./bench-support.ts";

const N = Number(process.env.BENCH_N || 100);
const N_COLD = Number(process.env.BENCH_N_COLD || 10);
const run = promisify(execFile);

const ms = (v: number) => Number(v.toFixed(2));
function row(samples: number[], floor?: number) {
  const s = [...samples].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { p50: ms(q(0.5)), p95: ms(q(0.95)), n: s.length, ...(floor ? { ratio: ms(q(0.5) / floor) } : {}) };
}
const p50 = (samples: number[]) => row(samples).p50;

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-bench-filehelper-"));
  const settings = { ...sandboxSettingsFromEnv(process.env), dataDir: path.join(dir, "data") };
  const user = await lookupSandboxUser(settings.user);
  const ws = path.join(dir, "ws");
  mkdirSync(path.join(ws, "src"), { recursive: true, mode: 0o755 });
  // A small project: 200 files of 100 lines, one line in ten matching.
  for (let i = 0; i < 200; i++) {
    const lines = Array.from({ length: 100 }, (_, j) =>
      j % 10 === 0 ? `const needle${j} = ${i};` : `line ${j}`,
    );
    writeFileSync(path.join(ws, "src", `f${i}.ts`), `${lines.join("\n")}\n`);
  }
  await run("chown", ["-R", `${user.uid}:${user.gid}`, ws]);
  chownSync(ws, user.uid, user.gid);
  await run("chmod", ["0711", dir]);
  const ops: Array<[string, FileToolName, Record<string, unknown>]> = [
    ["Read", "Read", { path: "src/f1.ts" }],
    ["Grep", "Grep", { pattern: "needle[0-9]+ = 1[0-9]?;", path: "src" }],
    ["Write", "Write", { path: "out/w.txt", content: "x".repeat(1000) }],
  ];
  const helpers = createFileHelpers(settings);
  try {
    const b0 = performance.now();
    await helperBundle(settings.dataDir);
    const bundleMs = performance.now() - b0;
    // Cold: a new session's first call starts its helper (the bundle already built).
    const cold = await time(N_COLD, (i) =>
      helpers.call(`cold${i}`, ws, { op: "tool", tool: "Read", args: { path: "src/f1.ts" } }),
    );
    // Bare bubblewrap: the same system part, the workspace bound, /bin/true, as the sandbox user.
    const bwrap = findProgram("bwrap")!;
    const bare = [...systemBinds(), "--proc", "/proc", ...deviceBinds(), "--bind", ws, ws, "--", "/bin/true"];
    const setpriv = [`--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups", "--"];
    const floor = await time(N, () => run("setpriv", [...setpriv, bwrap, ...bare]));
    const rows: Record<string, unknown> = {
      "bare bwrap /bin/true (floor)": row(floor),
      "bundle build (once per host process)": { ms: ms(bundleMs) },
      "first call, cold helper": row(cold, p50(floor)),
    };
    for (const [label, tool, args] of ops) {
      // The helper first: the in-process runs are root's, and would own what Write creates.
      await helpers.call("warm", ws, { op: "tool", tool, args });
      const warm = await time(N, () => helpers.call("warm", ws, { op: "tool", tool, args }));
      const inHost = await time(N, () => runFileTool(tool, args, ws));
      rows[`${label} in-process (workspace-files.ts in the host, as root)`] = row(inHost);
      rows[`${label} via warm helper`] = {
        ...row(warm),
        vsInProcess: ms(p50(warm) / p50(inHost)),
        vsBareBwrap: ms(p50(warm) / p50(floor)),
      };
    }
    console.log(JSON.stringify({ bench: "file-helper", unit: "ms", rows }, null, 2));
  } finally {
    await helpers.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
