// A client chooses {provider, model} and nothing else (issue #13 clauses 1 and 2), written as the
// person who would point the team's key at their own server: a baseUrl, headers or a key in the
// model are INVALID_PARAMS and create nothing; a provider the deployment does not list is
// MODEL_NOT_CONFIGURED; a session that names no model gets the configured default, which the host
// announced at start.
import { describe, expect, it } from "vitest";
import type { ProjectView, SessionView } from "../services/protocol/schemas.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";

const stack = useStack("modelchoice", {
  host: true,
  extra: { PI_DEFAULT_MODEL: "local-openai/qwen2.5-coder:7b", PI_MODEL_PROVIDERS: "local-openai,scripted" },
});

describe("the model a client may choose", () => {
  it("only {provider, model}; the default when none; only the providers the deployment lists", async () => {
    expect(await stack.host!.waitForEvent("host.default_model")).toMatchObject({
      model: { provider: "local-openai", model: "qwen2.5-coder:7b" },
      providers: ["local-openai", "scripted"],
    });
    const alice = stack.rpc("alice");
    const ws = stack.newWorkspace("mc");
    const project = await alice.call<ProjectView>("projects.create", { name: "mc", workspaceRoot: ws });
    const count = async () =>
      (await stack.db.pool.query("SELECT count(*)::int AS n FROM sessions")).rows[0].n as number;

    const plain = await alice.call<SessionView>("session.create", { projectId: project.id });
    expect(plain.model).toEqual({ provider: "local-openai", model: "qwen2.5-coder:7b" });

    const before = await count();
    for (const extra of [
      { baseUrl: "http://attacker.example/v1" },
      { headers: { authorization: "Bearer x" } },
      { apiKey: "OPENAI_API_KEY" },
    ])
      expect(
        await refusalCode(
          alice.call("session.create", {
            projectId: project.id,
            model: { provider: "local-openai", model: "qwen2.5-coder:7b", ...extra },
          }),
        ),
      ).toBe("INVALID_PARAMS");
    expect(
      await refusalCode(
        alice.call("session.create", {
          projectId: project.id,
          model: { provider: "openai", model: "gpt-4o" },
        }),
      ),
    ).toBe("MODEL_NOT_CONFIGURED");
    expect(await count()).toBe(before);
    expect(
      await refusalCode(
        alice.call("session.configure", {
          sessionId: plain.id,
          model: { provider: "anthropic", model: "claude" },
        }),
      ),
    ).toBe("MODEL_NOT_CONFIGURED");
    expect((await alice.call<SessionView>("session.get", { sessionId: plain.id })).model.provider).toBe(
      "local-openai",
    );
  });
});
