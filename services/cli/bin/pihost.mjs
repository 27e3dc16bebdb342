#!/usr/bin/env node
// The `pihost` bin: runs services/cli/main.ts under the repository's own tsx loader in a child
// node, forwarding arguments, stdio, exit code and termination signals.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const main = fileURLToPath(new URL("../main.ts", import.meta.url));
// Resolved from this file, i.e. the repository's node_modules, whatever the caller's cwd.
const tsx = import.meta.resolve("tsx");

const child = spawn(process.execPath, ["--import", tsx, main, ...process.argv.slice(2)], {
  stdio: "inherit",
});

// Ctrl-C reaches the child through the terminal's process group; other signals are passed on.
process.on("SIGINT", () => {});
for (const signal of ["SIGTERM", "SIGHUP"]) {
  process.on(signal, () => child.kill(signal));
}

child.on("error", (err) => {
  process.stderr.write(`error INTERNAL: cannot start node for pihost: ${err.message}\n`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else {
    process.exit(code ?? 1);
  }
});
