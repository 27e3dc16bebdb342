// Benchmark (not a test): what one Bash call's sandbox costs, without and with the project's
// network (slirp4netns), next to the same command run unconfined by the same user in the same run
// (setpriv + bash, no bwrap). Calls runBash directly: the host's authorization path is measured by
// `npm run bench`. Run as root: `npm run bench:sandbox` (needs bwrap, slirp4netns, the sandbox user).
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { execFile } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { runBash } from "../services/host/tools/bash-runner.ts";
import { lookupSandboxUser, sandboxSettingsFromEnv } from "../services/host/tools/sandbox.ts";
import { stats, time } from "./bench-support.ts";

const N = Number(process.env.BENCH_N || 100);
const run = promisify(execFile);

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-bench-sandbox-"));
  const settings = { ...sandboxSettingsFromEnv(process.env), dataDir: path.join(dir, "data") };
  const user = await lookupSandboxUser(settings.user);
  const ws = path.join(dir, "ws");
  await run("mkdir", ["-m", "0755", ws]);
  chownSync(ws, user.uid, user.gid);
  await run("chmod", ["0711", dir]);
  try {
    const ok = async (network: boolean) => {
      const r = await runBash({ command: "true" }, { workspace: ws, sessionId: "bench", settings, network });
      if (r.isError) throw new Error(`sandboxed call failed: ${JSON.stringify(r.content)}`);
    };
    await ok(false);
    await ok(true);
    const floor = await time(N, () =>
      run("setpriv", [
        `--reuid=${user.uid}`,
        `--regid=${user.gid}`,
        "--init-groups",
        "--",
        "bash",
        "-c",
        "true",
      ]),
    );
    const plain = await time(N, () => ok(false));
    const net = await time(N, () => ok(true));
    const f = stats(floor);
    const row = (samples: number[]) => {
      const s = stats(samples);
      const ms = (v: number) => Number(v.toFixed(1));
      return { p50: ms(s.p50), p99: ms(s.p99), n: s.n, ratio: ms(s.p50 / f.p50) };
    };
    const rows = {
      "unconfined setpriv + bash (floor)": row(floor),
      "sandbox, no network": row(plain),
      "sandbox, network (slirp4netns)": row(net),
    };
    console.log(JSON.stringify({ bench: "sandbox-start", unit: "ms", rows }, null, 2));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
