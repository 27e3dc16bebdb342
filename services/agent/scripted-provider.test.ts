import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Agent, type AgentMessage, type AgentTool } from "@mariozechner/pi-agent-core";
import { type AssistantMessage, getApiProvider, Type } from "@mariozechner/pi-ai";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ScriptStep } from "../protocol/schemas.ts";
import {
  createScriptedModel,
  DEMO_SCRIPT,
  SCRIPT_FINISHED_TEXT,
  type ScriptedCallLogLine,
  type ScriptedModel,
  scriptFor,
  scriptStepIndex,
  waitForFile,
} from "./scripted-provider.ts";

interface ToolCallSeen {
  tool: string;
  args: unknown;
}

/** In-memory tools: each records its call; ExitPlanMode terminates the run like the host's does. */
function memoryTools(seen: ToolCallSeen[], names = ["Glob", "Bash", "Write", "ExitPlanMode"]): AgentTool[] {
  return names.map((name) => ({
    name,
    label: name,
    description: `${name} (in memory)`,
    parameters: Type.Object({}, { additionalProperties: true }),
    async execute(_id, params) {
      seen.push({ tool: name, args: params });
      return {
        content: [{ type: "text", text: `${name} ok` }],
        details: {},
        ...(name === "ExitPlanMode" ? { terminate: true } : {}),
      };
    },
  }));
}

const user = (text: string): AgentMessage => ({ role: "user", content: text, timestamp: Date.now() });

function assistants(messages: readonly AgentMessage[]): AssistantMessage[] {
  return messages.filter((m): m is AssistantMessage => m.role === "assistant");
}

function textOf(message: AssistantMessage | undefined): string {
  return (message?.content ?? [])
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
}

describe("scripted provider", () => {
  let dir: string;
  let registered: ScriptedModel[];

  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "pi-scripted-"));
    registered = [];
  });
  afterEach(() => {
    for (const r of registered) r.unregister();
    rmSync(dir, { recursive: true, force: true });
  });

  function scripted(script: readonly ScriptStep[], extra: { callLogPath?: string; turnId?: string } = {}) {
    const model = createScriptedModel({
      sessionId: "sess1",
      turnId: extra.turnId ?? "turn1",
      modelId: "demo",
      script,
      callLogPath: extra.callLogPath,
    });
    registered.push(model);
    return model;
  }

  function agentFor(
    model: ScriptedModel,
    tools: AgentTool[],
    messages: AgentMessage[],
    systemPrompt = "plan sys",
  ) {
    return new Agent({
      initialState: { systemPrompt, model: model.model, tools, messages },
      toolExecution: "sequential",
    });
  }

  it("runs the demo script across a planning turn and an execution turn", async () => {
    const seen: ToolCallSeen[] = [];
    const planning = agentFor(scripted(DEMO_SCRIPT, { turnId: "t-plan" }), memoryTools(seen), [
      user("greet"),
    ]);
    await planning.continue();
    expect(seen.map((s) => s.tool)).toEqual(["Glob", "Bash", "ExitPlanMode"]);
    expect(seen[1]?.args).toEqual({ command: "git status" });
    expect(seen[0]?.args).toEqual({ pattern: "**/*" });
    const plan = seen[2]?.args as { title: string; markdown: string; question: string };
    expect(plan.title).toBe("Add a greeting file");
    expect(plan.question).toBe("Create GREETING.md?");
    expect(plan.markdown).toContain("GREETING.md");
    expect(plan.markdown.split("\n").length).toBeGreaterThan(2);
    // ExitPlanMode terminated the run: the transcript ends with its tool result.
    expect(planning.state.messages.at(-1)?.role).toBe("toolResult");
    expect(assistants(planning.state.messages).map((m) => m.stopReason)).toEqual([
      "toolUse",
      "toolUse",
      "toolUse",
    ]);

    const execution = agentFor(scripted(DEMO_SCRIPT, { turnId: "t-exec" }), memoryTools(seen), [
      ...planning.state.messages,
      user("Plan approved. Execute it."),
    ]);
    await execution.continue();
    expect(seen.slice(3)).toEqual([
      { tool: "Write", args: { path: "GREETING.md", content: "Hello from pi-host.\n" } },
    ]);
    const last = assistants(execution.state.messages).at(-1);
    expect(last?.stopReason).toBe("stop");
    expect(textOf(last)).toBe("Done: GREETING.md is written.");
  });

  it("selects the step from the number of assistant messages already in the context", async () => {
    const script: ScriptStep[] = [{ text: "zero" }, { text: "one" }, { text: "two" }];
    const prior: AgentMessage[] = [user("a")];
    for (const text of ["earlier 1", "earlier 2"]) {
      const a = agentFor(scripted([{ text }, { text }]), [], [user("x")]);
      await a.continue();
      prior.push(assistants(a.state.messages)[0] as AgentMessage, user("next"));
    }
    expect(scriptStepIndex(prior)).toBe(2);
    const agent = agentFor(scripted(script), [], prior);
    await agent.continue();
    expect(textOf(assistants(agent.state.messages).at(-1))).toBe("two");
  });

  it("answers (script finished) past the end of the script", async () => {
    const agent = agentFor(scripted([{ text: "only step" }]), [], [user("hi")]);
    await agent.continue();
    expect(textOf(assistants(agent.state.messages).at(-1))).toBe("only step");
    await agent.prompt("again");
    await agent.prompt("and again");
    const texts = assistants(agent.state.messages).map(textOf);
    expect(texts).toEqual(["only step", SCRIPT_FINISHED_TEXT, SCRIPT_FINISHED_TEXT]);
    expect(assistants(agent.state.messages).every((m) => m.stopReason === "stop")).toBe(true);
  });

  it("waits for a file before answering a waitForFile step", async () => {
    const file = path.join(dir, "go");
    const agent = agentFor(scripted([{ waitForFile: file, text: "after the file" }]), [], [user("wait")]);
    const run = agent.continue();
    await new Promise((r) => setTimeout(r, 150));
    expect(agent.state.isStreaming).toBe(true);
    expect(assistants(agent.state.messages)).toHaveLength(0);
    writeFileSync(file, "");
    await run;
    expect(textOf(assistants(agent.state.messages).at(-1))).toBe("after the file");
  });

  it("stops waiting for a file when the run is aborted", async () => {
    const agent = agentFor(
      scripted([{ waitForFile: path.join(dir, "never"), text: "unreachable" }]),
      [],
      [user("w")],
    );
    const run = agent.continue();
    await new Promise((r) => setTimeout(r, 80));
    const abortedAt = Date.now();
    agent.abort();
    await run;
    expect(Date.now() - abortedAt).toBeLessThan(1_000);
    const last = assistants(agent.state.messages).at(-1);
    expect(last?.stopReason).toBe("aborted");
    expect(textOf(last)).not.toContain("unreachable");
  });

  it("waitForFile resolves false on abort and true for an existing file", async () => {
    const ac = new AbortController();
    const pending = waitForFile(path.join(dir, "missing"), ac.signal);
    ac.abort();
    await expect(pending).resolves.toBe(false);
    writeFileSync(path.join(dir, "present"), "");
    await expect(waitForFile(path.join(dir, "present"))).resolves.toBe(true);
  });

  it("appends one JSON line per model call to the call log", async () => {
    const callLogPath = path.join(dir, "calls.jsonl");
    const seen: ToolCallSeen[] = [];
    const systemPrompt = "You are in Plan mode.";
    const agent = agentFor(
      scripted([{ toolCalls: [{ name: "Glob", args: { pattern: "*" } }] }, { text: "done" }], {
        callLogPath,
        turnId: "turnLog",
      }),
      memoryTools(seen, ["Glob", "Write"]),
      [user("go")],
      systemPrompt,
    );
    await agent.continue();
    const lines = readFileSync(callLogPath, "utf8").trim().split("\n");
    expect(lines).toHaveLength(2);
    const parsed = lines.map((l) => JSON.parse(l) as ScriptedCallLogLine);
    const sha = createHash("sha256").update(systemPrompt).digest("hex");
    expect(parsed.map((p) => p.step)).toEqual([0, 1]);
    for (const line of parsed) {
      expect(line).toMatchObject({ sessionId: "sess1", turnId: "turnLog", tools: ["Glob", "Write"] });
      expect(line.systemPromptSha256).toBe(sha);
      expect(Number.isNaN(Date.parse(line.at))).toBe(false);
    }
  });

  it("logs a waitForFile call before it starts waiting", async () => {
    const callLogPath = path.join(dir, "calls.jsonl");
    const file = path.join(dir, "release");
    const agent = agentFor(
      scripted([{ waitForFile: file, text: "released" }], { callLogPath }),
      [],
      [user("x")],
    );
    const run = agent.continue();
    for (let i = 0; i < 40; i++) {
      await new Promise((r) => setTimeout(r, 25));
      try {
        if (readFileSync(callLogPath, "utf8").length > 0) break;
      } catch {}
    }
    expect(JSON.parse(readFileSync(callLogPath, "utf8")).step).toBe(0);
    writeFileSync(file, "");
    await run;
    expect(textOf(assistants(agent.state.messages).at(-1))).toBe("released");
  });

  it("keeps concurrent turns apart and unregisters its provider", async () => {
    const a = scripted([{ text: "from a" }], { turnId: "ta" });
    const b = scripted([{ text: "from b" }], { turnId: "tb" });
    expect(a.model.api).not.toBe(b.model.api);
    expect(a.model.provider).toBe("scripted");
    const [ra, rb] = [agentFor(a, [], [user("1")]), agentFor(b, [], [user("2")])];
    await Promise.all([ra.continue(), rb.continue()]);
    expect(textOf(assistants(ra.state.messages)[0])).toBe("from a");
    expect(textOf(assistants(rb.state.messages)[0])).toBe("from b");
    a.unregister();
    expect(getApiProvider(a.model.api)).toBeUndefined();
    expect(getApiProvider(b.model.api)).toBeDefined();
  });

  it("uses the demo script only for model demo without a script", () => {
    expect(scriptFor({ model: "demo" })).toBe(DEMO_SCRIPT);
    const own: ScriptStep[] = [{ text: "x" }];
    expect(scriptFor({ model: "demo", script: own })).toBe(own);
    expect(scriptFor({ model: "other" })).toBeNull();
  });
});
