// The system prompt and the tools a turn is offered, per mode and turn kind, from the one TOOLS table of
// machines/tool-policy.ts, with the project's own instructions (its AGENTS.md) appended. Pure: the
// caller reads the instructions. Offering is not authorization: the host decides every call with the policy.
import { offeredTools, TOOLS } from "../../../../machines/tool-policy.ts";
import type { OperatingMode, ToolSpec } from "../../../protocol/schemas.ts";

/** Where the turn stands: an execution turn carries out a plan a person approved. */
export interface PromptState {
  turnKind: "prompt" | "execution";
}

/** What the project adds: the text of its AGENTS.md, if it has a readable one. */
export interface PromptContext {
  instructions?: string | null;
}

/** The project's instructions are cut to this many bytes of UTF-8 (whole characters). */
export const MAX_INSTRUCTIONS_BYTES = 16 * 1024;
export const INSTRUCTIONS_HEADING = "## Project instructions (AGENTS.md)";
export const INSTRUCTIONS_CUT_MARKER = `[AGENTS.md was cut here: only its first ${MAX_INSTRUCTIONS_BYTES} bytes are shown]`;

const AGENT_PROMPT = `You are the pi coding agent working in the session's workspace. Use the tools to inspect and change files.
When a task needs a plan a person should approve first, call EnterPlanMode alone.`;

const EXECUTION_PROMPT = `This turn executes a plan a person approved: the plan's path and content are in this turn's opening message.
Carry it out as approved and report what you did and anything you could not do. If the plan proves wrong,
call EnterPlanMode alone to propose a new one instead of departing from it.`;

const PLAN_PROMPT = `You are the pi coding agent in Plan mode: you inspect the workspace and write a plan; you do not change files.
Inspect the relevant files, tests and docs first (Read, Glob, Grep, BrowserPreview).
In the plan, name the affected behaviour and the files the change touches.
Include the validation steps (tests to run or add), any migration steps and the recovery steps if the change goes wrong.
List the open questions a person should answer.
Submit one complete Markdown plan with ExitPlanMode (a title, the plan as Markdown and the question for the approver), as the only call of its batch.
Never claim the plan was executed: nothing changes until a person approves it, and an approved plan runs in a later Agent turn.
Tools in Plan mode: Bash asks a person first under the ask and accept-edits permission modes and may change files under auto, so use it only to inspect; Write, Edit and plugin tools are unavailable.`;

/** `text` cut to at most `maxBytes` of UTF-8 at a character boundary, with the visible marker when cut. */
export function boundInstructions(text: string, maxBytes = MAX_INSTRUCTIONS_BYTES): string {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return text;
  let end = maxBytes;
  // Never end inside a multi-byte character: back off over its continuation bytes.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return `${bytes.subarray(0, end).toString("utf8")}\n\n${INSTRUCTIONS_CUT_MARKER}`;
}

/**
 * The system prompt of a turn: the mode's (an Agent execution turn's says it executes an approved plan),
 * then the project's instructions, bounded, under INSTRUCTIONS_HEADING; none when they are empty.
 */
export function buildSystemPrompt(mode: OperatingMode, state: PromptState, context: PromptContext): string {
  const base =
    mode === "plan"
      ? PLAN_PROMPT
      : state.turnKind === "execution"
        ? `${AGENT_PROMPT}\n${EXECUTION_PROMPT}`
        : AGENT_PROMPT;
  const instructions = context.instructions?.trim();
  if (!instructions) return base;
  return [
    base,
    "",
    INSTRUCTIONS_HEADING,
    "The project's AGENTS.md (at the workspace root) says the following. Follow it where it does not conflict with the rules above.",
    "",
    boundInstructions(instructions),
  ].join("\n");
}

/**
 * The tools a turn is offered: exactly the TOOLS table's offer for the mode (fresh copies, so a caller
 * cannot change the table through a spec), then the enabled plugin tools in Agent mode only. The turn
 * kind does not change the offer today; the policy decides each call.
 */
export function buildTools(
  mode: OperatingMode,
  _state: PromptState,
  plugins: readonly ToolSpec[],
): ToolSpec[] {
  const builtins = offeredTools(mode).map((name) => ({
    name,
    description: TOOLS[name].spec.description,
    parameters: structuredClone(TOOLS[name].spec.parameters) as Record<string, unknown>,
  }));
  return mode === "agent" ? [...builtins, ...plugins.map((p) => structuredClone(p))] : builtins;
}
