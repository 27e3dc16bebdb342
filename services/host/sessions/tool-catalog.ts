// The tools and system prompt the model is offered in each mode, from the one TOOLS table of
// machines/tool-policy.ts. Offering is not authorization: the host decides every call with the policy.
import { offeredTools, TOOLS } from "../../../machines/tool-policy.ts";
import type { OperatingMode, ToolSpec } from "../../protocol/schemas.ts";

/** A fresh copy per call: a caller may not change the table through a spec it was given. */
export function toolsFor(mode: OperatingMode): ToolSpec[] {
  return offeredTools(mode).map((name) => ({
    name,
    description: TOOLS[name].spec.description,
    parameters: structuredClone(TOOLS[name].spec.parameters) as Record<string, unknown>,
  }));
}

const AGENT_PROMPT = `You are the pi coding agent working in the session's workspace. Use the tools to inspect and change files.
When a task needs a plan a person should approve first, call EnterPlanMode alone.`;

const PLAN_PROMPT = `You are the pi coding agent in Plan mode: inspect the workspace (Read, Glob, Grep; Bash only as the
permission mode allows) and do not change files. When the plan is ready, call ExitPlanMode alone with a title, the
plan as Markdown and the question for the approver. A person approves or rejects it; approved plans run in Agent mode.`;

export function systemPromptFor(mode: OperatingMode): string {
  return mode === "plan" ? PLAN_PROMPT : AGENT_PROMPT;
}
