// A turn in flight is never handed to another worker (issue #13 clause 8 acceptance), written as the
// fault: the first worker is stopped mid-stream, once with SIGTERM and once with SIGKILL. The turn
// ends aborted with its code (WORKER_STOPPED; TURN_LEASE_EXPIRED after the lease when killed), the
// model server records no further request for it, and the next prompt's turn runs on the second
// worker, whose model request carries the earlier messages: one context, any worker.
import { describe, expect, it } from "vitest";
import { useFakeOpenAIModels } from "./support/fake-providers.ts";
import { turnEnded } from "./support/plans.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";

const fake = useFakeOpenAIModels();

const stack = useStack("wstop", {
  extra: { PI_MODELS_JSON: fake.file, PI_TURN_LEASE_MS: "2000", PI_TURN_HEARTBEAT_MS: "300" },
  host: true,
  async prepare() {
    await fake.start();
  },
});

const contents = (body: Record<string, unknown>) => JSON.stringify((body.messages as unknown[]) ?? []);

async function stopMidTurn(how: "SIGTERM" | "SIGKILL", code: string) {
  const alice = stack.client("alice");
  const ws = stack.newWorkspace(`w-${how}`);
  const project = await alice.call("projects.create", { name: how, workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode: "agent",
    model: { provider: "local-openai", model: "m1" },
  });
  const events = stack.events(session.id);
  const first = await stack.startWorker();
  // A slow reply: 40 chunks 150 ms apart; the worker is stopped while it streams.
  fake
    .openai()
    .reply({ kind: "text", chunks: Array.from({ length: 40 }, (_, i) => `slow ${i} `), delayMs: 150 });
  const before = fake.openai().requests.length;
  const { turnId } = await alice.call("session.prompt", {
    sessionId: session.id,
    text: `first prompt (${how})`,
  });
  await eventually(async () => fake.openai().requests.length > before, 20_000, "the model request");
  await new Promise((r) => setTimeout(r, 600));
  if (how === "SIGTERM") await first.stop();
  else await first.kill();
  const ended = await turnEnded(events, turnId, 30_000);
  expect(ended).toMatchObject({ status: "aborted", code });
  const requestsOfTurn = fake.openai().requests.length;
  await new Promise((r) => setTimeout(r, 1_000));
  expect(fake.openai().requests.length).toBe(requestsOfTurn);

  // The next prompt runs on a second worker, with the earlier messages in its request.
  const second = await stack.startWorker();
  fake.openai().reply({ kind: "text", chunks: ["second answer"] });
  const next = await alice.call("session.prompt", {
    sessionId: session.id,
    text: "second prompt",
  });
  expect(await turnEnded(events, next.turnId, 30_000)).toMatchObject({ status: "completed" });
  const last = fake.openai().requests.at(-1)!;
  expect(contents(last.body)).toContain(`first prompt (${how})`);
  expect(contents(last.body)).toContain("second prompt");
  expect(second.lines.join("\n")).toContain(next.turnId);
  expect(second.lines.join("\n")).not.toContain(`"turnId":"${turnId}"`);
  await second.stop();
  events.stop();
}

describe("a worker stopped mid-turn", () => {
  it("SIGTERM: the turn ends WORKER_STOPPED, nothing more is asked of the model, the next turn runs elsewhere with the context", async () => {
    await stopMidTurn("SIGTERM", "WORKER_STOPPED");
  }, 90_000);

  it("SIGKILL: the turn ends TURN_LEASE_EXPIRED after the lease, the next turn runs elsewhere with the context", async () => {
    await stopMidTurn("SIGKILL", "TURN_LEASE_EXPIRED");
  }, 90_000);
});
