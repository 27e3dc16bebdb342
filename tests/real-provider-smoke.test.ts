// Opt-in smoke test of one real provider (issue #13 acceptance): with ANTHROPIC_API_KEY or
// OPENAI_API_KEY in the environment (PI_SMOKE_MODEL=provider/model picks the model, else the
// cheapest-looking built-in one), a real worker answers one prompt through pi-ai's built-in
// provider. Without a key it is skipped, and says so.
import { getModels } from "@mariozechner/pi-ai";
import { describe, expect, it } from "vitest";
import { turnEnded } from "./support/plans.ts";
import { useStack } from "./support/stack-fixture.ts";
import { isEvent } from "./support/events.ts";

const provider = process.env.ANTHROPIC_API_KEY ? "anthropic" : process.env.OPENAI_API_KEY ? "openai" : null;
if (!provider)
  console.log("real provider smoke test skipped: set ANTHROPIC_API_KEY or OPENAI_API_KEY to run it");

function smokeModel(): { provider: string; model: string } {
  const chosen = process.env.PI_SMOKE_MODEL;
  if (chosen) {
    const [p, ...m] = chosen.split("/");
    return { provider: p!, model: m.join("/") };
  }
  const models = getModels(provider as "anthropic" | "openai");
  const small = models.find((m) => /haiku|mini/i.test(m.id)) ?? models[0]!;
  return { provider: provider!, model: small.id };
}

describe.skipIf(!provider)("a real provider", () => {
  const stack = useStack("smoke", {
    host: true,
    worker: true,
    extra: Object.fromEntries(
      ["ANTHROPIC_API_KEY", "OPENAI_API_KEY"].flatMap((k) => (process.env[k] ? [[k, process.env[k]!]] : [])),
    ),
  });
  it("answers one prompt", async () => {
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", {
      name: "smoke",
      workspaceRoot: stack.newWorkspace("smoke"),
    });
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
      model: smokeModel(),
    });
    const events = stack.events(session.id);
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "Reply with the single word: pong",
    });
    expect(await turnEnded(events, turnId, 120_000)).toMatchObject({ status: "completed" });
    const message = events.all.find(isEvent("message"));
    expect(message?.text.toLowerCase()).toContain("pong");
    events.stop();
  }, 150_000);
});
