// The real Bash default timeout: a call without `timeout` is killed after exactly 60 s (docs/architecture.md "Tools"),
// over NATS against a host started without PI_BASH_DEFAULT_TIMEOUT_MS. One ~62 s test, run by
// `npm test` like every other file; the fast suite checks the same path with a short default.
import { afterAll, beforeAll, expect, it } from "vitest";
import { agentClient } from "../../services/protocol/rpc-client.ts";
import { openStackDir, sandboxTurn } from "../support/sandbox.ts";
import { createStack, type Stack } from "../support/stack.ts";

let stack: Stack;

beforeAll(async () => {
  stack = await createStack("bashdefault");
  openStackDir(stack);
  await stack.startHost();
});

afterAll(async () => {
  await stack?.close();
});

it("a Bash call without timeout is ended after 60 s with TOOL_TIMEOUT", { timeout: 120_000 }, async () => {
  const { assignment: a } = await sandboxTurn(stack, "agent");
  const agent = agentClient({
    nc: stack.nc,
    prefix: stack.env.prefix,
    timeoutMs: 90_000,
  }).to(stack.agentClient.host);
  // Keep the turn's lease alive while the command runs, as a worker would.
  const beat = setInterval(() => {
    agent.call("heartbeat", { turnId: a.turnId, token: a.token }).catch(() => {});
  }, 2_000);
  try {
    const t0 = Date.now();
    const r = await agent.call("tools.execute", {
      sessionId: a.sessionId,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "slow-1",
      tool: "Bash",
      args: { command: "sleep 90" },
      batch: [{ toolCallId: "slow-1", tool: "Bash" }],
    });
    const took = Date.now() - t0;
    expect(r).toMatchObject({ isError: true, code: "TOOL_TIMEOUT", details: { timeoutMs: 60_000 } });
    expect(took).toBeGreaterThanOrEqual(60_000);
    expect(took).toBeLessThan(65_000);
  } finally {
    clearInterval(beat);
  }
});
