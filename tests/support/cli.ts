// `pihost <args>` for integration tests: the real command tree in this process, on a real NATS
// connection to the stack's host, as a named person. Output and exit code are returned.
import { connectBus } from "../../services/cli/cli-bus.ts";
import { type CliDeps, runCli } from "../../services/cli/cli-program.ts";
import type { Stack } from "./stack.ts";

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function pihost(
  stack: Stack,
  args: string[],
  principal = "alice",
  extra: Partial<CliDeps> = {},
): Promise<CliRun> {
  return startPihost(stack, args, principal, extra).done;
}

export interface RunningCli {
  /** What it printed so far. */
  output(): { stdout: string; stderr: string };
  /** Resolves once stdout matches `re` (polled), with the match. */
  printed(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  done: Promise<CliRun>;
}

/** `pihost <args>` started in this process and left running (a follower, a watch). */
export function startPihost(
  stack: Stack,
  args: string[],
  principal = "alice",
  extra: Partial<CliDeps> = {},
): RunningCli {
  let stdout = "";
  let stderr = "";
  const done = runCli(args, {
    env: { NATS_URL: stack.env.natsUrl, PI_PREFIX: stack.env.prefix, PI_PRINCIPAL: principal },
    cwd: stack.dir,
    osUserName: principal,
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    connect: connectBus,
    readFile: async (file) => (await import("node:fs/promises")).readFile(file, "utf8"),
    ...extra,
  }).then((code) => ({ code, stdout, stderr }));
  let finished = false;
  void done.then(() => {
    finished = true;
  });
  return {
    output: () => ({ stdout, stderr }),
    done,
    async printed(re, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const m = stdout.match(re);
        if (m) return m;
        if (finished || Date.now() > until)
          throw new Error(
            `pihost ${args.join(" ")} ${finished ? "ended" : "timed out"} before printing ${re}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`,
          );
        await new Promise((r) => setTimeout(r, 25));
      }
    },
  };
}

/** The one JSON object `--json` prints on stdout. */
export function jsonOut(r: CliRun): unknown {
  return JSON.parse(r.stdout);
}

/** The `{error: {...}}` object `--json` prints on stderr for a failure. */
export function jsonError(r: CliRun): { code: string; message: string; retriable: boolean } {
  return (JSON.parse(r.stderr) as { error: { code: string; message: string; retriable: boolean } }).error;
}
