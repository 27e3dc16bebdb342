// The tools and system prompt the model is offered in each mode. Offering is not authorization: the
// host decides every call with the tool policy, whatever the model was shown.
import { Type } from "typebox";
import type { OperatingMode, ToolSpec } from "../../protocol/schemas.ts";

const S = (schema: object) => JSON.parse(JSON.stringify(schema)) as Record<string, unknown>;

const CATALOG: Record<string, ToolSpec> = {
  Read: {
    name: "Read",
    description: "Read a text file in the workspace. Optional 0-based line offset and line limit.",
    parameters: S(
      Type.Object({
        path: Type.String(),
        offset: Type.Optional(Type.Integer({ minimum: 0 })),
        limit: Type.Optional(Type.Integer({ minimum: 1 })),
      }),
    ),
  },
  Glob: {
    name: "Glob",
    description: "List workspace files matching a glob pattern such as **/*.ts.",
    parameters: S(Type.Object({ pattern: Type.String() })),
  },
  Grep: {
    name: "Grep",
    description: "Search workspace files for a regular expression; optional path and file glob.",
    parameters: S(
      Type.Object({
        pattern: Type.String(),
        path: Type.Optional(Type.String()),
        glob: Type.Optional(Type.String()),
      }),
    ),
  },
  Write: {
    name: "Write",
    description: "Create or replace a file in the workspace with the given content.",
    parameters: S(Type.Object({ path: Type.String(), content: Type.String() })),
  },
  Edit: {
    name: "Edit",
    description: "Replace the one exact occurrence of oldText with newText in a workspace file.",
    parameters: S(Type.Object({ path: Type.String(), oldText: Type.String(), newText: Type.String() })),
  },
  Bash: {
    name: "Bash",
    description: "Run a shell command in the workspace sandbox (timeout in seconds, 1-300, default 60).",
    parameters: S(
      Type.Object({
        command: Type.String(),
        timeout: Type.Optional(Type.Integer({ minimum: 1, maximum: 300 })),
      }),
    ),
  },
  BrowserPreview: {
    name: "BrowserPreview",
    description:
      "Open a page in a sandboxed headless browser and return its title, visible text and a screenshot path. Only http(s)://127.0.0.1, localhost or [::1] URLs and file:// URLs inside the workspace; every request to another origin is blocked. waitMs (0-10000) waits after load.",
    parameters: S(
      Type.Object({
        url: Type.String(),
        waitMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000 })),
      }),
    ),
  },
  new_context: {
    name: "new_context",
    description: "Compact the conversation context: continue from the optional summary. Changes no file.",
    parameters: S(Type.Object({ summary: Type.Optional(Type.String()) })),
  },
  EnterPlanMode: {
    name: "EnterPlanMode",
    description:
      "Switch this session to Plan: inspect, then submit a plan for a person to approve. Must be the only tool call.",
    parameters: S(Type.Object({})),
  },
  ExitPlanMode: {
    name: "ExitPlanMode",
    description:
      "Submit plan: the Markdown plan, a title and the question for the approver. Must be the only tool call; the run then waits for approval.",
    parameters: S(Type.Object({ title: Type.String(), markdown: Type.String(), question: Type.String() })),
  },
};

const OFFERED: Record<OperatingMode, string[]> = {
  agent: ["Read", "Glob", "Grep", "Write", "Edit", "Bash", "BrowserPreview", "new_context", "EnterPlanMode"],
  plan: ["Read", "Glob", "Grep", "Bash", "BrowserPreview", "new_context", "ExitPlanMode"],
};

export function toolsFor(mode: OperatingMode): ToolSpec[] {
  return OFFERED[mode].map((name) => CATALOG[name]!);
}

const AGENT_PROMPT = `You are the pi coding agent working in the session's workspace. Use the tools to inspect and change files.
When a task needs a plan a person should approve first, call EnterPlanMode alone.`;

const PLAN_PROMPT = `You are the pi coding agent in Plan mode: inspect the workspace (Read, Glob, Grep; Bash only as the
permission mode allows) and do not change files. When the plan is ready, call ExitPlanMode alone with a title, the
plan as Markdown and the question for the approver. A person approves or rejects it; approved plans run in Agent mode.`;

export function systemPromptFor(mode: OperatingMode): string {
  return mode === "plan" ? PLAN_PROMPT : AGENT_PROMPT;
}
