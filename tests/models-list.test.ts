// Explicit model choice across workers (issue #13 clause 2): two real workers, one with a
// models.json serving `local-openai/m1` from a local server, one with pi-ai's built-ins only.
// models.list shows what the live workers serve (and whether the key is configured); a turn of a
// session on `local-openai/m1` is claimed only by the worker that serves it, never by the other; a
// worker that stops is gone from both lists at once (its goodbye).
import { describe, expect, it } from "vitest";
import { useFakeOpenAIModels } from "./support/fake-providers.ts";
import { turnEnded } from "./support/plans.ts";
import { startWorker } from "./support/processes.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const fake = useFakeOpenAIModels();

const stack = useStack("mlist", {
  host: true,
  async prepare() {
    await fake.start();
  },
});

describe("models.list and offers by model", () => {
  it("lists what live workers serve; only the worker serving a session's model claims its turns", async () => {
    // The plain worker first, so it would win every offer it took.
    const plain = startWorker({ ...stack.env, extra: { PI_WORKER_ID: "plain" } });
    await plain.waitForEvent("worker.ready");
    const serving = startWorker({
      ...stack.env,
      extra: { PI_WORKER_ID: "serving", PI_MODELS_JSON: fake.file },
    });
    await serving.waitForEvent("worker.ready");
    try {
      const alice = stack.client("alice");
      const list = await eventually(async () => {
        const l = await alice.call("models.list");
        return l.models.some((m) => m.provider === "local-openai") ? l : null;
      });
      expect(list.models.filter((m) => m.provider === "local-openai")).toEqual([
        { provider: "local-openai", model: "m1", workers: 1, keyConfigured: true },
      ]);
      expect(list.default).toEqual({ provider: "scripted", model: "demo" });

      const project = await alice.call("projects.create", {
        name: "ml",
        workspaceRoot: stack.newWorkspace("ml"),
      });
      const session = await alice.call("session.create", {
        projectId: project.id,
        mode: "agent",
        model: { provider: "local-openai", model: "m1" },
      });
      const events = stack.events(session.id);
      for (let i = 0; i < 3; i++) {
        fake.openai().reply({ kind: "text", chunks: [`answer ${i}`] });
        const { turnId } = await alice.call("session.prompt", {
          sessionId: session.id,
          text: `question ${i}`,
        });
        expect(await turnEnded(events, turnId, 30_000)).toMatchObject({ status: "completed" });
        expect(serving.lines.some((l) => l.includes('"turn.claimed"') && l.includes(turnId))).toBe(true);
        expect(plain.lines.some((l) => l.includes(turnId))).toBe(false);
      }
      events.stop();

      // A worker that stops says goodbye: gone from workers.list and models.list at once, not after
      // the 90 s a silent worker is remembered.
      await serving.stop();
      const gone = await alice.call("models.list");
      expect(gone.models.filter((m) => m.provider === "local-openai")).toEqual([]);
      const workers = await alice.call("workers.list");
      expect(workers.workers.map((w) => w.workerId)).toEqual(["plain"]);
      expect(
        await refusalCode(
          alice.call("session.create", {
            projectId: project.id,
            model: { provider: "local-openai", model: "m1" },
          }),
        ),
      ).toBe("MODEL_NOT_CONFIGURED");
    } finally {
      await Promise.all([plain.stop(), serving.stop()]);
    }
  }, 90_000);
});
