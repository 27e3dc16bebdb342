// Turns the host's ToolSpecs into pi AgentTools whose execute is a `tools.execute` request: the worker
// runs no tool itself. Owns the batch computation and the mapping of host results to tool results.
import type { AgentMessage, AgentTool, AgentToolResult } from "@mariozechner/pi-agent-core";
import type { TSchema } from "@mariozechner/pi-ai";
import { isAppError } from "../protocol/app-error.ts";
import type { ErrorCode } from "../protocol/error-codes.ts";
import type { ToolExecuteResult, ToolSpec } from "../protocol/schemas.ts";

export interface ToolBatchEntry {
  toolCallId: string;
  tool: string;
}

/** One tool call as the worker forwards it (sessionId, turnId, token and mode are added by the caller). */
export interface ToolCallRequest {
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  batch: ToolBatchEntry[];
}

export type ExecuteToolFn = (request: ToolCallRequest, signal?: AbortSignal) => Promise<ToolExecuteResult>;

export interface HostToolsDeps {
  /** The Agent's transcript at execute time (its last assistant message holds the batch). */
  getMessages: () => readonly AgentMessage[];
  execute: ExecuteToolFn;
  /** A result that switched the mode (EnterPlanMode): the run ends and continues with these. */
  onNext?: (next: NonNullable<ToolExecuteResult["next"]>) => void;
  /** The host refused the call with an AppError (TURN_TOKEN_INVALID ends the turn for this worker). */
  onRefusal?: (code: ErrorCode, err: Error) => void;
}

/**
 * Every tool call of the assistant message that contains `toolCallId` (the host refuses a plan tool
 * that is not alone in its batch). Falls back to the call alone if no message holds it.
 */
export function toolBatchFor(
  messages: readonly AgentMessage[],
  toolCallId: string,
  tool: string,
): ToolBatchEntry[] {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m?.role !== "assistant") continue;
    const calls = m.content.filter((c) => c.type === "toolCall");
    if (calls.some((c) => c.id === toolCallId)) return calls.map((c) => ({ toolCallId: c.id, tool: c.name }));
  }
  return [{ toolCallId, tool }];
}

/**
 * The tool result pi records for a host reply. An error result is thrown (pi turns the throw into
 * an error tool result the model sees). A mode switch always terminates the batch, so the run ends
 * and the caller can continue with the new prompt and tools.
 */
export function toAgentToolResult(result: ToolExecuteResult): AgentToolResult<Record<string, unknown>> {
  if (result.isError) {
    throw new Error(result.content.map((c) => c.text).join("\n") || result.code || "tool failed");
  }
  const details: Record<string, unknown> = { ...result.details };
  if (result.code !== undefined) details.code = result.code;
  const out: AgentToolResult<Record<string, unknown>> = { content: result.content, details };
  if (result.terminate || result.next) out.terminate = true;
  return out;
}

/** Tools made for names the model called without being offered them (never sent to the model). */
const forwarders = new WeakSet<AgentTool>();

/** Whether `tool` only forwards a call the model was not offered (see forwarderFor). */
export function isForwarder(tool: AgentTool): boolean {
  return forwarders.has(tool);
}

/**
 * A tool for a name the model invented (or was offered before a mode switch): its call still goes
 * to `tools.execute`, so the host decides it (TOOL_NOT_FOUND, TOOL_DISABLED_IN_PLAN, ...), records
 * and audits it, and people see the refusal; the worker decides nothing itself.
 */
export function forwarderFor(name: string, deps: HostToolsDeps): AgentTool {
  const [tool] = buildHostTools(
    [{ name, description: "not offered: the host decides", parameters: { type: "object" } }],
    deps,
  );
  forwarders.add(tool!);
  return tool!;
}

/** AgentTools for the given specs; parameters stay the host's plain JSON schema. */
export function buildHostTools(specs: readonly ToolSpec[], deps: HostToolsDeps): AgentTool[] {
  return specs.map((spec) => ({
    name: spec.name,
    label: spec.name,
    description: spec.description,
    parameters: spec.parameters as unknown as TSchema,
    async execute(toolCallId, params, signal) {
      if (signal?.aborted) throw new Error("aborted before the tool ran");
      const request: ToolCallRequest = {
        toolCallId,
        tool: spec.name,
        args: (params ?? {}) as Record<string, unknown>,
        batch: toolBatchFor(deps.getMessages(), toolCallId, spec.name),
      };
      let result: ToolExecuteResult;
      try {
        result = await deps.execute(request, signal);
      } catch (err) {
        if (isAppError(err)) {
          deps.onRefusal?.(err.code, err);
          throw new Error(`${err.code}: ${err.message}`, { cause: err });
        }
        throw err;
      }
      if (result.next && !result.isError) deps.onNext?.(result.next);
      return toAgentToolResult(result);
    },
  }));
}
