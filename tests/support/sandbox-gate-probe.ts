// A stand-in host for tests/sandbox-network.test.ts: starts one sandbox with network, reports the
// sandbox's first pid as {"event":"sandbox.waiting"} (and {"event":"sandbox.started"} once the
// command runs, if it does), then waits to be killed. With PI_SANDBOX_SLIRP4NETNS set to a script
// that never reports ready the command waits at the gate; with the real slirp4netns it runs. The
// test kills this process and checks what ran and that nothing outlived it.
import { sandboxSettingsFromEnv, startSandbox } from "../../services/host/tools/sandbox.ts";

const [workspace, command] = process.argv.slice(2);
if (!workspace || !command) throw new Error("usage: sandbox-gate-probe.ts <workspace> <command>");
const sandbox = await startSandbox({
  workspace,
  sessionId: "gate-probe",
  command,
  settings: sandboxSettingsFromEnv(process.env),
  network: true,
});
const deadline = Date.now() + 10_000;
while (sandbox.firstPid() === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
process.stdout.write(`${JSON.stringify({ event: "sandbox.waiting", pid: sandbox.firstPid() })}\n`);
void sandbox.started.then((started) => {
  if (started)
    process.stdout.write(`${JSON.stringify({ event: "sandbox.started", pid: sandbox.firstPid() })}\n`);
});
setInterval(() => {}, 1000);
