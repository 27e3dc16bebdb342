// A client chooses {provider, model} and nothing else (issue #13 clauses 1 and 2), written as the
// person who would point the team's key at their own server: a baseUrl, headers or a key in the
// model are INVALID_PARAMS and create nothing; a provider the deployment does not list is
// MODEL_NOT_CONFIGURED; a session that names no model gets the configured default, which the host
// announced at start.
import { describe, expect, it } from "vitest";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";
import type { ParamsOf } from "../services/protocol/methods.ts";

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
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("mc");
    const project = await alice.call("projects.create", { name: "mc", workspaceRoot: ws });
    const count = async () =>
      (await stack.db.pool.query("SELECT count(*)::int AS n FROM sessions")).rows[0].n as number;

    const plain = await alice.call("session.create", { projectId: project.id });
    expect(plain.model).toEqual({ provider: "local-openai", model: "qwen2.5-coder:7b" });

    const before = await count();
    for (const extra of [
      { baseUrl: "http://attacker.example/v1" },
      { headers: { authorization: "Bearer x" } },
      { apiKey: "OPENAI_API_KEY" },
    ])
      expect(
        await refusalCode(
          alice.raw("session.create", {
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
    expect((await alice.call("session.get", { sessionId: plain.id })).model.provider).toBe("local-openai");
  });

  it("scheduled tasks get the same check at every entry: create, update, run now and a due run", async () => {
    // The finding: with `scripted,openai` allowed, scheduled.create took anthropic/claude and
    // ../../x, and scheduled.run made sessions of them whose turns were offered forever.
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", {
      name: "mcs",
      workspaceRoot: stack.newWorkspace("mcs"),
    });
    const footprint = async () =>
      (
        await stack.db.pool.query(
          `SELECT (SELECT count(*)::int FROM scheduled_tasks) AS tasks,
                  (SELECT count(*)::int FROM scheduled_runs) AS runs,
                  (SELECT count(*)::int FROM sessions WHERE project_id = $1) AS sessions`,
          [project.id],
        )
      ).rows[0];
    const task = (model?: ParamsOf<"scheduled.create">["model"]) => ({
      name: "nightly",
      cron: "0 3 * * *",
      timezone: "UTC",
      projectId: project.id,
      prompt: "check",
      ...(model === undefined ? {} : { model }),
    });
    const before = await footprint();
    for (const model of [
      { provider: "anthropic", model: "claude" },
      { provider: "../../x", model: "../../x" },
      { provider: "openai", model: "gpt-4o" },
    ])
      expect([model, await refusalCode(alice.call("scheduled.create", task(model)))]).toEqual([
        model,
        "MODEL_NOT_CONFIGURED",
      ]);
    expect(await footprint()).toEqual(before);

    // Allowed now; an update to a model the deployment does not allow is refused and changes nothing.
    const ok = await alice.call("scheduled.create", task());
    expect(
      await refusalCode(
        alice.call("scheduled.update", { taskId: ok.id, model: { provider: "anthropic", model: "claude" } }),
      ),
    ).toBe("MODEL_NOT_CONFIGURED");
    const kept = await stack.db.pool.query("SELECT version, config FROM scheduled_tasks WHERE id = $1", [
      ok.id,
    ]);
    expect(kept.rows[0].version).toBe(ok.version);

    // A task that names a model no longer allowed (written before the rule, or by an older host):
    // run now is refused with no run and no session; a due run fails MODEL_NOT_CONFIGURED, no session.
    await stack.db.pool.query(
      `UPDATE scheduled_tasks SET config = jsonb_set(config, '{model}', '{"provider":"anthropic","model":"claude"}')
        WHERE id = $1`,
      [ok.id],
    );
    const mid = await footprint();
    expect(await refusalCode(alice.call("scheduled.run", { taskId: ok.id }))).toBe("MODEL_NOT_CONFIGURED");
    expect(await footprint()).toEqual(mid);
    const next = (await stack.db.pool.query("SELECT next_run_at FROM scheduled_tasks WHERE id = $1", [ok.id]))
      .rows[0].next_run_at as Date;
    await stack.hook("clock.set", { now: next.getTime() + 1_000 });
    const runs = await eventually(async () => {
      const r = await alice.call("scheduled.runs", { taskId: ok.id });
      // A due run is claimed first and then fails: wait for it to end.
      return r.runs.length > 0 && r.runs.every((x) => x.status !== "claimed") ? r.runs : null;
    });
    expect(runs).toEqual([
      expect.objectContaining({ status: "failed", errorCode: "MODEL_NOT_CONFIGURED", sessionId: null }),
    ]);
    expect((await footprint()).sessions).toBe(mid.sessions);
  });
});
