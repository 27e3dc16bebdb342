// Usage is the model's report, carried by the worker: untrusted. A report that is not numbers
// (strings, objects, huge values) counts nothing and never breaks session.get.
import { describe, expect, it } from "vitest";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim } from "./support/worker-double.ts";

const stack = useStack("usage", { host: true });

describe("usage on session.get", () => {
  it("sums the numbers workers reported and ignores anything else", async () => {
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", {
      name: "u",
      workspaceRoot: stack.newWorkspace("u"),
    });
    const session = await alice.call("session.create", { projectId: project.id, mode: "agent" });
    expect(session.usage).toEqual({
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      cost: 0,
      lastTurn: null,
    });
    const a = await promptAndClaim(stack, session.id);
    const assistant = (usage: unknown) => ({
      role: "assistant",
      content: [{ type: "text", text: "x" }],
      usage,
      timestamp: 1,
    });
    await stack.agentClient.call("append", {
      turnId: a.turnId,
      token: a.token,
      messages: [
        assistant({ input: 100, output: 20, cacheRead: 5, cacheWrite: 0, cost: { total: 0.25 } }),
        assistant({ input: "lots", output: { x: 1 }, cost: "free" }),
        assistant(null),
        assistant({ input: 1, output: 2 }),
      ],
    });
    const view = await alice.call("session.get", { sessionId: session.id });
    expect(view.usage).toEqual({
      input: 101,
      output: 22,
      cacheRead: 5,
      cacheWrite: 0,
      cost: 0.25,
      lastTurn: { turnId: a.turnId, input: 101, output: 22, cacheRead: 5, cacheWrite: 0, cost: 0.25 },
    });
  });
});
