import { Agent, type AgentMessage } from "@mariozechner/pi-agent-core";
import type { ToolResultMessage } from "@mariozechner/pi-ai";
import { afterEach, describe, expect, it } from "vitest";
import { AppError } from "../protocol/app-error.ts";
import type { ScriptStep, ToolExecuteResult, ToolSpec } from "../protocol/schemas.ts";
import { buildHostTools, type ToolCallRequest, toAgentToolResult, toolBatchFor } from "./agent-tools.ts";
import { createScriptedModel, type ScriptedModel } from "./scripted-provider.ts";

const spec = (
  name: string,
  parameters: Record<string, unknown> = { type: "object", properties: {} },
): ToolSpec => ({
  name,
  description: `${name} tool`,
  parameters,
});

const ok = (text: string, extra: Partial<ToolExecuteResult> = {}): ToolExecuteResult => ({
  content: [{ type: "text", text }],
  isError: false,
  ...extra,
});

function toolResults(messages: readonly AgentMessage[]): ToolResultMessage[] {
  return messages.filter((m): m is ToolResultMessage => m.role === "toolResult");
}

describe("host tools", () => {
  const registered: ScriptedModel[] = [];
  afterEach(() => {
    for (const r of registered.splice(0)) r.unregister();
  });

  function run(
    script: ScriptStep[],
    specs: ToolSpec[],
    execute: (req: ToolCallRequest) => Promise<ToolExecuteResult>,
  ) {
    const model = createScriptedModel({ sessionId: "s", turnId: "t", modelId: "m", script });
    registered.push(model);
    const events = { next: [] as unknown[], refusals: [] as string[] };
    const agent: Agent = new Agent({
      initialState: {
        systemPrompt: "sys",
        model: model.model,
        messages: [{ role: "user", content: "go", timestamp: Date.now() }],
      },
      toolExecution: "sequential",
    });
    agent.state.tools = buildHostTools(specs, {
      getMessages: () => agent.state.messages,
      execute,
      onNext: (n) => events.next.push(n),
      onRefusal: (code) => events.refusals.push(code),
    });
    return { agent, events };
  }

  it("forwards each call with its whole assistant batch and plain JSON-schema arguments", async () => {
    const seen: ToolCallRequest[] = [];
    const readSchema = {
      type: "object",
      properties: { path: { type: "string" } },
      required: ["path"],
      additionalProperties: false,
    };
    const { agent } = run(
      [
        {
          toolCalls: [
            { name: "Read", args: { path: "a.txt" } },
            { name: "Glob", args: { pattern: "*" } },
          ],
        },
        { text: "done" },
      ],
      [spec("Read", readSchema), spec("Glob")],
      async (req) => {
        seen.push(req);
        return ok(`${req.tool} result`, { code: "TOOL_FAILED", details: { bytes: 3 } });
      },
    );
    await agent.continue();
    expect(seen.map((r) => [r.tool, r.args])).toEqual([
      ["Read", { path: "a.txt" }],
      ["Glob", { pattern: "*" }],
    ]);
    const batch = seen[0]?.batch ?? [];
    expect(batch.map((b) => b.tool)).toEqual(["Read", "Glob"]);
    expect(seen[1]?.batch).toEqual(batch);
    expect(batch.map((b) => b.toolCallId)).toEqual(seen.map((r) => r.toolCallId));
    const results = toolResults(agent.state.messages);
    expect(results.map((r) => r.isError)).toEqual([false, false]);
    expect(results[0]?.details).toEqual({ bytes: 3, code: "TOOL_FAILED" });
  });

  it("rejects arguments that do not match the JSON schema before calling the host", async () => {
    const seen: ToolCallRequest[] = [];
    const schema = { type: "object", properties: { path: { type: "string" } }, required: ["path"] };
    const { agent } = run(
      [{ toolCalls: [{ name: "Read", args: {} }] }, { text: "ok" }],
      [spec("Read", schema)],
      async (r) => {
        seen.push(r);
        return ok("x");
      },
    );
    await agent.continue();
    expect(seen).toHaveLength(0);
    expect(toolResults(agent.state.messages)[0]?.isError).toBe(true);
  });

  it("turns an error result and a refusal into error tool results the model sees", async () => {
    const { agent, events } = run(
      [
        { toolCalls: [{ name: "Write", args: {} }] },
        { toolCalls: [{ name: "Bash", args: {} }] },
        { text: "end" },
      ],
      [spec("Write"), spec("Bash")],
      async (req) => {
        if (req.tool === "Write")
          return { content: [{ type: "text", text: "WRITE_DISABLED_IN_PLAN: no" }], isError: true };
        throw new AppError("TURN_TOKEN_INVALID", "token revoked");
      },
    );
    await agent.continue();
    const results = toolResults(agent.state.messages);
    expect(results.map((r) => r.isError)).toEqual([true, true]);
    expect(results[0]?.content).toEqual([{ type: "text", text: "WRITE_DISABLED_IN_PLAN: no" }]);
    expect(results[1]?.content[0]).toMatchObject({ text: expect.stringContaining("TURN_TOKEN_INVALID") });
    expect(events.refusals).toEqual(["TURN_TOKEN_INVALID"]);
  });

  it("ends the run on a mode switch and reports the next prompt and tools", async () => {
    const next = { mode: "plan" as const, systemPrompt: "plan prompt", tools: [spec("ExitPlanMode")] };
    const { agent, events } = run(
      [{ toolCalls: [{ name: "EnterPlanMode", args: {} }] }, { text: "should not run in this run" }],
      [spec("EnterPlanMode")],
      async () => ok("now in plan", { next }),
    );
    await agent.continue();
    expect(events.next).toEqual([next]);
    expect(agent.state.messages.at(-1)?.role).toBe("toolResult");
  });

  it("maps results and batches without an Agent", () => {
    expect(toAgentToolResult(ok("x", { terminate: true }))).toEqual({
      content: [{ type: "text", text: "x" }],
      details: {},
      terminate: true,
    });
    expect(() => toAgentToolResult({ content: [], isError: true, code: "TOOL_FAILED" })).toThrow(
      "TOOL_FAILED",
    );
    expect(toolBatchFor([], "c1", "Read")).toEqual([{ toolCallId: "c1", tool: "Read" }]);
  });
});
