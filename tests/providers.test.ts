// Real model providers end to end: the host and a worker as child processes, the worker's
// PI_MODELS_JSON naming local fake servers (tests/support/fake-providers.ts) exactly as docs/models.md
// documents. An Agent-mode session answers through the OpenAI-compatible and the Anthropic fake, a
// model's tool call runs on the host and its result goes back to the model, and a model the file
// lacks ends the turn with MODEL_NOT_CONFIGURED.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { decodeJson } from "../services/protocol/envelope.ts";
import type { SessionEvent } from "../services/protocol/events.ts";
import { liveSubject } from "../services/protocol/subjects.ts";
import type { SessionView } from "../services/protocol/schemas.ts";
import { type FakeProvider, startFakeAnthropic, startFakeOpenAI } from "./support/fake-providers.ts";
import { approveProposal, turnEnded } from "./support/plans.ts";
import { spawnTs } from "./support/processes.ts";
import { useStack } from "./support/stack-fixture.ts";
import { isEvent } from "./support/events.ts";

const MODELS_DIR = mkdtempSync(path.join(os.tmpdir(), "pihost-models-"));
const MODELS_FILE = path.join(MODELS_DIR, "models.json");
const ANTHROPIC_KEY = "sk-ant-test-from-env";
let openai: FakeProvider;
let anthropic: FakeProvider;
/** A port that was listening once and is closed now: connections to it are refused. */
let closedBaseUrl: string;

const stack = useStack("providers", {
  extra: { PI_MODELS_JSON: MODELS_FILE, FAKE_ANTHROPIC_KEY: ANTHROPIC_KEY },
  host: true,
  worker: true,
  // The servers' ports are known only once they listen: the file is written before the worker starts.
  async prepare() {
    openai = await startFakeOpenAI();
    anthropic = await startFakeAnthropic();
    const gone = await startFakeOpenAI();
    closedBaseUrl = gone.baseUrl;
    await gone.close();
    const models = {
      providers: {
        "local-openai": {
          baseUrl: openai.baseUrl,
          api: "openai-completions",
          apiKey: "ollama",
          models: [{ id: "qwen2.5-coder:7b", contextWindow: 32768, maxTokens: 4096 }],
        },
        "local-down": {
          baseUrl: closedBaseUrl,
          api: "openai-completions",
          apiKey: "unused",
          models: [{ id: "nobody-home" }],
        },
        "local-anthropic": {
          baseUrl: anthropic.baseUrl,
          api: "anthropic-messages",
          apiKey: "FAKE_ANTHROPIC_KEY",
          models: [{ id: "claude-local", name: "Claude (local fake)" }],
        },
      },
    };
    writeFileSync(MODELS_FILE, JSON.stringify(models, null, 2));
  },
});

afterAll(async () => {
  await Promise.all([openai?.close(), anthropic?.close()]);
  rmSync(MODELS_DIR, { recursive: true, force: true });
});

async function agentSession(name: string, model: { provider: string; model: string }) {
  const ws = stack.newWorkspace(name);
  writeFileSync(path.join(ws, "README.md"), "# fake provider workspace\n");
  const alice = stack.client("alice");
  const project = await alice.call("projects.create", { name, workspaceRoot: ws });
  return alice.call("session.create", { projectId: project.id, mode: "agent", model });
}

async function promptTurn(session: SessionView, text: string) {
  const events = stack.events(session.id);
  const { turnId } = await stack.client("alice").call("session.prompt", { sessionId: session.id, text });
  const ended = await turnEnded(events, turnId);
  events.stop();
  return { turnId, ended, events: events.all };
}

const messagesOf = (events: SessionEvent[], turnId: string) =>
  events.filter(isEvent("message", (e) => e.turnId === turnId));

const toolNames = (body: Record<string, unknown>, api: "openai" | "anthropic"): string[] =>
  ((body.tools as Array<Record<string, unknown>>) ?? []).map((t) =>
    api === "openai" ? String((t.function as { name: string }).name) : String(t.name),
  );

describe("models from PI_MODELS_JSON against local servers", () => {
  it("an OpenAI-compatible model answers an Agent-mode turn; the server saw the model and the tools", async () => {
    const session = await agentSession("openai-text", {
      provider: "local-openai",
      model: "qwen2.5-coder:7b",
    });
    const before = openai.requests.length;
    openai.reply({ kind: "text", chunks: ["Hello ", "from the ", "local model."], delayMs: 10 });
    const { turnId, ended, events } = await promptTurn(session, "Say hello");

    expect(ended).toMatchObject({ status: "completed" });
    expect(messagesOf(events, turnId).map((m) => m.text)).toEqual(["Hello from the local model."]);
    const [request, ...more] = openai.requests.slice(before);
    expect(more).toEqual([]);
    expect(request!.path).toBe("/v1/chat/completions");
    expect(request!.headers.authorization).toBe("Bearer ollama");
    expect(request!.body).toMatchObject({ model: "qwen2.5-coder:7b", stream: true });
    expect(toolNames(request!.body, "openai")).toEqual(
      expect.arrayContaining(["Glob", "Read", "Write", "Bash"]),
    );
    expect(JSON.stringify(request!.body.messages)).toContain("Say hello");
    // The usage the server reported (11 in, 7 out) is the session's, and its last turn's.
    const view = await stack.client("alice").call("session.get", { sessionId: session.id });
    expect(view.usage).toMatchObject({ input: 11, output: 7, lastTurn: { turnId, input: 11, output: 7 } });
  });

  it("the same through the Anthropic messages API, its key taken from the worker's environment", async () => {
    const session = await agentSession("anthropic-text", {
      provider: "local-anthropic",
      model: "claude-local",
    });
    const before = anthropic.requests.length;
    anthropic.reply({ kind: "text", chunks: ["Hi ", "there."] });
    const { turnId, ended, events } = await promptTurn(session, "Greet me");

    expect(ended).toMatchObject({ status: "completed" });
    expect(messagesOf(events, turnId).map((m) => m.text)).toEqual(["Hi there."]);
    const [request, ...more] = anthropic.requests.slice(before);
    expect(more).toEqual([]);
    expect(request!.path).toBe("/v1/messages");
    expect(request!.headers["x-api-key"]).toBe(ANTHROPIC_KEY);
    expect(request!.body).toMatchObject({ model: "claude-local", stream: true });
    expect(toolNames(request!.body, "anthropic")).toEqual(
      expect.arrayContaining(["Glob", "Read", "Write", "Bash"]),
    );
  });

  it.each(["openai", "anthropic"] as const)(
    "a tool call from the model (%s) runs on the host and the follow-up request carries its result",
    async (api) => {
      const fake = api === "openai" ? openai : anthropic;
      const model =
        api === "openai"
          ? { provider: "local-openai", model: "qwen2.5-coder:7b" }
          : { provider: "local-anthropic", model: "claude-local" };
      const session = await agentSession(`${api}-tool`, model);
      const before = fake.requests.length;
      fake.reply(
        { kind: "toolCall", name: "Glob", args: { pattern: "*.md" }, id: `call_glob_${api}` },
        { kind: "text", chunks: ["There is a README."] },
      );
      const live: Array<{ kind: string; text: string; toolCallId?: string }> = [];
      const sub = stack.nc.subscribe(liveSubject(stack.env.prefix, "alice", session.id), {
        callback: (_e, m) => {
          live.push(...(decodeJson(m.data) as { chunks: typeof live }).chunks);
        },
      });
      await stack.nc.flush();
      const { turnId, ended, events } = await promptTurn(session, "Which markdown files are there?");
      sub.unsubscribe();
      // The call was shown live as the model emitted it, before the host ran it.
      expect(live).toContainEqual({ kind: "toolCall", text: "Glob", toolCallId: `call_glob_${api}` });

      expect(ended).toMatchObject({ status: "completed" });
      expect(events.find((e) => e.type === "tool.result")).toMatchObject({
        tool: "Glob",
        decision: "allow",
        isError: false,
      });
      expect(messagesOf(events, turnId).at(-1)?.text).toBe("There is a README.");
      const requests = fake.requests.slice(before);
      expect(requests).toHaveLength(2);
      const followUp = requests[1]!.body.messages as Array<Record<string, unknown>>;
      if (api === "openai") {
        const result = followUp.find((m) => m.role === "tool");
        expect(result).toMatchObject({ tool_call_id: "call_glob_openai" });
        expect(String(result!.content)).toContain("README.md");
      } else {
        const blocks = followUp.flatMap((m) => (Array.isArray(m.content) ? m.content : [])) as Array<
          Record<string, unknown>
        >;
        const result = blocks.find((b) => b.type === "tool_result");
        expect(result).toMatchObject({ tool_use_id: "call_glob_anthropic" });
        expect(JSON.stringify(result!.content)).toContain("README.md");
      }
    },
  );

  it("a reply spread over 2 s reaches people as it streams: the first live delta comes long before the message", async () => {
    const session = await agentSession("streamed", { provider: "local-openai", model: "qwen2.5-coder:7b" });
    const chunks = Array.from({ length: 20 }, (_, i) => `part ${i}. `);
    openai.reply({ kind: "text", chunks, delayMs: 110 });
    const live: Array<{ at: number; text: string }> = [];
    const sub = stack.nc.subscribe(liveSubject(stack.env.prefix, "alice", session.id), {
      callback: (_e, m) => {
        const body = decodeJson(m.data) as { chunks: Array<{ kind: string; text: string }> };
        live.push({ at: Date.now(), text: body.chunks.map((c) => c.text).join("") });
      },
    });
    await stack.nc.flush();
    const events = stack.events(session.id);
    let messageAt = 0;
    void events
      .waitFor((e) => e.type === "message")
      .then(() => {
        messageAt = Date.now();
      });
    const { turnId } = await stack
      .client("alice")
      .call("session.prompt", { sessionId: session.id, text: "Stream it" });
    expect(await turnEnded(events, turnId)).toMatchObject({ status: "completed" });
    sub.unsubscribe();
    events.stop();
    expect(live.map((l) => l.text).join("")).toBe(chunks.join(""));
    // Several live messages, the first ~2 s before the message that follows the server's last chunk.
    expect(live.length).toBeGreaterThan(3);
    expect(messageAt - live[0]!.at).toBeGreaterThan(1_500);
  });

  it.each([
    { api: "openai" as const, provider: "local-openai", model: "qwen2.5-coder:7b" },
    { api: "anthropic" as const, provider: "local-anthropic", model: "claude-local" },
  ])(
    "a whole plan cycle through the $api server: the offered tools and prompt follow the mode, the execution sees the planning turn and the plan",
    async ({ api, provider, model }) => {
      const fake = api === "openai" ? openai : anthropic;
      const session = await agentSession(`cycle-${api}`, { provider, model });
      await stack
        .client("alice")
        .call("session.configure", { sessionId: session.id, permissionMode: "auto" });
      const markdown = "# Write out.txt\n\n1. Write `out.txt` with `done`.\n";
      fake.reply(
        { kind: "toolCall", name: "EnterPlanMode", args: {} },
        { kind: "toolCall", name: "Read", args: { path: "README.md" } },
        { kind: "toolCall", name: "Grep", args: { pattern: "fake" } },
        {
          kind: "toolCall",
          name: "ExitPlanMode",
          args: { title: "Write out.txt", markdown, question: "Go?" },
        },
      );
      const before = fake.requests.length;
      const events = stack.events(session.id);
      await stack
        .client("alice")
        .call("session.prompt", { sessionId: session.id, text: "Plan, then write out.txt" });
      const awaiting = await events.waitFor(
        isEvent("plan.changed", (e) => e.state === "awaiting_approval"),
        30_000,
      );
      const planning = fake.requests.slice(before);
      expect(planning).toHaveLength(4);
      // OpenAI: the first message is the system prompt; Anthropic: the `system` field.
      const system = (r: (typeof planning)[number]) =>
        api === "openai"
          ? String((r.body.messages as Array<{ role: string; content: unknown }>)[0]?.content)
          : JSON.stringify(r.body.system);
      // Agent first (Write offered, no ExitPlanMode), then Plan (no Write, ExitPlanMode offered).
      expect(toolNames(planning[0]!.body, api)).toEqual(expect.arrayContaining(["Write", "EnterPlanMode"]));
      expect(toolNames(planning[0]!.body, api)).not.toContain("ExitPlanMode");
      for (const r of planning.slice(1)) {
        expect(toolNames(r.body, api)).toEqual(expect.arrayContaining(["Read", "Grep", "ExitPlanMode"]));
        expect(toolNames(r.body, api)).not.toContain("Write");
        expect(system(r)).toContain("Plan mode");
        expect(system(r)).toContain("as the only call of its batch");
      }
      expect(system(planning[0]!)).not.toContain("Plan mode:");

      const proposal = awaiting.proposal!;
      fake.reply(
        { kind: "toolCall", name: "Write", args: { path: "out.txt", content: "done\n" } },
        { kind: "text", chunks: ["Done."] },
      );
      const execStart = fake.requests.length;
      await approveProposal(stack, proposal, "auto");
      await events.waitFor(
        isEvent("plan.changed", (e) => e.execution?.state === "completed"),
        30_000,
      );
      const execution = fake.requests.slice(execStart);
      expect(execution.length).toBe(2);
      const sent = JSON.stringify(execution[0]!.body.messages);
      // The planning turn's messages (the prompt, the Read of README.md) and the approved plan itself.
      expect(sent).toContain("Plan, then write out.txt");
      expect(sent).toContain("fake provider workspace");
      expect(sent).toContain("1. Write `out.txt` with `done`.");
      expect(toolNames(execution[0]!.body, api)).toContain("Write");
      const ws = (
        await stack.db.pool.query(
          "SELECT p.workspace_root FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = $1",
          [session.id],
        )
      ).rows[0].workspace_root as string;
      expect(readFileSync(path.join(ws, "out.txt"), "utf8")).toBe("done\n");
      events.stop();
    },
    90_000,
  );

  it("a model no live worker serves is MODEL_NOT_CONFIGURED at session.create, and no server is called", async () => {
    const before = openai.requests.length;
    let refusal: unknown;
    try {
      await agentSession("unknown-model", { provider: "local-openai", model: "not-in-the-file" });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toMatchObject({ code: "MODEL_NOT_CONFIGURED" });
    expect(String((refusal as Error).message)).toMatch(/no live worker serves local-openai\/not-in-the-file/);
    expect(openai.requests.length).toBe(before);
  });

  // The turn carries the code (provider-errors.ts) and pi-ai's text of the provider's answer.
  it("a provider's 401 ends the turn PROVIDER_UNAUTHORIZED with the provider's status and message", async () => {
    const session = await agentSession("openai-401", { provider: "local-openai", model: "qwen2.5-coder:7b" });
    openai.reply({
      kind: "error",
      status: 401,
      body: {
        error: {
          message: "Incorrect API key provided: ollama.",
          type: "invalid_request_error",
          code: "invalid_api_key",
        },
      },
    });
    const { ended } = await promptTurn(session, "Hello?");
    expect(ended).toMatchObject({
      status: "error",
      code: "PROVIDER_UNAUTHORIZED",
      reason: "401 Incorrect API key provided: ollama.",
    });
  });

  it.each([
    {
      status: 429,
      headers: { "retry-after": "1" },
      message: "Rate limit reached for requests",
      code: "PROVIDER_RATE_LIMITED",
      // The client library retries twice (honouring retry-after) before the call fails.
      times: 3,
    },
    {
      status: 500,
      message: "The server had an error while processing your request.",
      code: "PROVIDER_ERROR",
      times: 3,
    },
    {
      status: 400,
      message:
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens. Please reduce the length of the messages.",
      code: "CONTEXT_TOO_LARGE",
      times: 1,
    },
  ])(
    "a provider's $status ends the turn $code with its message",
    async ({ status, headers, message, code, times }) => {
      const session = await agentSession(`openai-${status}`, {
        provider: "local-openai",
        model: "qwen2.5-coder:7b",
      });
      for (let i = 0; i < times; i++)
        openai.reply({
          kind: "error",
          status,
          ...(headers ? { headers } : {}),
          body: { error: { message, type: "server_error" } },
        });
      const { ended } = await promptTurn(session, "Hello?");
      expect(ended).toMatchObject({ status: "error", code, reason: `${status} ${message}` });
    },
    30_000,
  );

  it.each([
    {
      status: 401,
      type: "authentication_error",
      message: "invalid x-api-key",
      code: "PROVIDER_UNAUTHORIZED",
      times: 1,
    },
    {
      status: 429,
      type: "rate_limit_error",
      message: "Number of request tokens has exceeded your per-minute rate limit",
      code: "PROVIDER_RATE_LIMITED",
      times: 3,
    },
    { status: 529, type: "overloaded_error", message: "Overloaded", code: "PROVIDER_ERROR", times: 3 },
  ])(
    "the Anthropic fake's $status ends the turn $code with its message",
    async ({ status, type, message, code, times }) => {
      const session = await agentSession(`anthropic-${status}`, {
        provider: "local-anthropic",
        model: "claude-local",
      });
      const body = { type: "error", error: { type, message } };
      for (let i = 0; i < times; i++)
        anthropic.reply({ kind: "error", status, headers: { "retry-after": "1" }, body });
      const { ended } = await promptTurn(session, "Hello?");
      expect(ended).toMatchObject({ status: "error", code, reason: `${status} ${JSON.stringify(body)}` });
    },
    30_000,
  );

  it("a server that refuses connections ends the turn PROVIDER_UNREACHABLE", async () => {
    const session = await agentSession("refused", { provider: "local-down", model: "nobody-home" });
    const { ended } = await promptTurn(session, "Hello?");
    expect(ended).toMatchObject({
      status: "error",
      code: "PROVIDER_UNREACHABLE",
      reason: "Connection error.",
    });
  });

  it("a worker whose models.json uses pi's command form refuses to start, naming the key", async () => {
    const bad = path.join(MODELS_DIR, "command.json");
    const provider = { baseUrl: "http://127.0.0.1:1/v1", api: "openai-completions", models: [{ id: "m" }] };
    writeFileSync(bad, JSON.stringify({ providers: { vault: { ...provider, apiKey: "!op read x" } } }));
    const worker = spawnTs("services/agent/main.ts", {
      NATS_URL: stack.env.natsUrl,
      PI_PREFIX: stack.env.prefix,
      PI_DEV_MODE: "1",
      PI_MODELS_JSON: bad,
    });
    const line = await worker.waitForEvent("worker.config_invalid");
    expect(line.error).toBe(
      `PI_MODELS_JSON (${bad}): providers.vault.apiKey: pi's command form (!command) is not supported: put the value in an environment variable of the worker and name that variable`,
    );
    expect(await worker.exited).toBe(1);
  });
});
