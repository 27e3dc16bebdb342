// Entry point of `pihost` (run with tsx; services/cli/bin/pihost.mjs is the installed shim).
// Wires the real process, file system and NATS into runCli; all behaviour lives in cli-program.ts.
import { readFile } from "node:fs/promises";
import os from "node:os";
import { runCli } from "./cli-program.ts";

function osUserName(): string | undefined {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER;
  }
}

// A reader that went away (`pihost ... | head -3`) ends the command quietly, never with a stack trace.
for (const stream of [process.stdout, process.stderr])
  stream.on("error", (err: NodeJS.ErrnoException) => {
    if (err.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw err;
  });

process.exitCode = await runCli(process.argv.slice(2), {
  env: process.env,
  cwd: process.cwd(),
  osUserName: osUserName(),
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  // Loaded on first use, so usage errors and --help do not pay for the NATS client.
  connect: async (config) => (await import("./cli-bus.ts")).connectBus(config),
  readFile: (file) => readFile(file, "utf8"),
  stdin: process.stdin,
  stdinIsTTY: process.stdin.isTTY === true,
  stdoutIsTTY: process.stdout.isTTY === true,
  stderrIsTTY: process.stderr.isTTY === true,
});
