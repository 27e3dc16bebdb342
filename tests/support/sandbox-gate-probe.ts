// A stand-in host for tests/sandbox-network.test.ts: starts one sandbox with network whose
// slirp4netns (PI_SANDBOX_SLIRP4NETNS, a script that never reports ready) keeps the command waiting
// at the gate, reports the sandbox's first pid as {"event":"sandbox.waiting"}, then waits to be
// killed. The test kills it and checks that the command never ran and nothing outlived it.
import { sandboxSettingsFromEnv, startSandbox } from "../../services/host/sandbox.ts";

const [workspace, command] = process.argv.slice(2);
if (!workspace || !command) throw new Error("usage: sandbox-gate-probe.ts <workspace> <command>");
const sandbox = await startSandbox({
  workspace,
  sessionId: "gate-probe",
  command,
  settings: sandboxSettingsFromEnv(),
  network: true,
});
const deadline = Date.now() + 10_000;
while (sandbox.firstPid() === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
process.stdout.write(`${JSON.stringify({ event: "sandbox.waiting", pid: sandbox.firstPid() })}\n`);
setInterval(() => {}, 1000);
