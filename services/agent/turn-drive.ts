// Drives the pi Agent through one claimed turn: its model calls, the host's tools (each call decided
// by the host with tools.execute), the transcript appended as it grows, and mode switches inside the
// turn (EnterPlanMode). The turn's other steps (context, heartbeats, turn.end) are turn-runner.ts's.
import {
  Agent,
  type AgentEvent,
  type AgentMessage,
  type AgentTool,
  type StreamFn,
} from "@mariozechner/pi-agent-core";
import { type Api, type Model, streamSimple } from "@mariozechner/pi-ai";
import { isAppError } from "../protocol/app-error.ts";
import { errorFields } from "../runtime/log.ts";
import type { OperatingMode, ToolExecuteResult, ToolSpec } from "../protocol/schemas.ts";
import {
  buildHostTools,
  forwarderFor,
  type HostToolsDeps,
  isForwarder,
  type ToolCallRequest,
} from "./agent-tools.ts";
import { callBounded } from "./bounded-call.ts";
import { createDeltaSender } from "./delta-sender.ts";
import { classifyProviderFailure } from "./provider-errors.ts";
import { withoutProviderSecrets } from "./provider-text.ts";
import {
  abortTurn,
  describe,
  isTransportError,
  loseOwner,
  ownerGone,
  type TurnContext,
  type TurnOutcome,
} from "./turn-context.ts";

/** tools.execute is safe to repeat (the host returns the recorded result), so lost replies are retried. */
const TOOL_ATTEMPTS = 3;

/** What one drive of the Agent learns as it goes. */
interface DriveState {
  mode: OperatingMode;
  pendingNext: NonNullable<ToolExecuteResult["next"]> | undefined;
  failure: string | undefined;
  /**
   * The tool list of the model call in flight (the loop's own array): a name the model calls
   * that is not in it gets a forwarder there, so the host decides that call too; forwarders are
   * never offered to the model (docs/protocol.md "Agent-worker protocol").
   */
  callTools: AgentTool[] | undefined;
}

type DeltaSender = ReturnType<typeof createDeltaSender>;

/** Settles with `promise`, or rejects as soon as `signal` aborts (the request itself keeps going). */
function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return promise;
  promise.catch(() => {});
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(new Error("aborted while the host ran the tool"));
    if (signal.aborted) return onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}

async function executeTool(
  t: TurnContext,
  s: DriveState,
  req: ToolCallRequest,
  signal?: AbortSignal,
): Promise<ToolExecuteResult> {
  const { deps, fields } = t;
  const { sessionId, turnId, token } = t.assignment;
  const params = { sessionId, turnId, token, ...req, requestedMode: s.mode };
  for (let attempt = 1; ; attempt++) {
    try {
      // Arguments too big for one message travel in parts (bounded-call.ts).
      return await abortable(callBounded(deps.nc, deps.toolClient, "tools.execute", params), signal);
    } catch (err) {
      // The owner lost the turn: this call's outcome is the new owner's record
      // (TOOL_OUTCOME_UNKNOWN), never a result the model sees.
      if (ownerGone(err) && (!isTransportError(err) || attempt >= TOOL_ATTEMPTS)) loseOwner(t, err);
      if (!isTransportError(err) || attempt >= TOOL_ATTEMPTS || signal?.aborted || t.ownerLost) throw err;
      await new Promise((r) => setTimeout(r, 200 * attempt));
      deps.log.warn("turn.tool_retry", {
        ...fields,
        toolCallId: req.toolCallId,
        attempt,
        ...errorFields(err),
      });
    }
  }
}

function hostToolDeps(t: TurnContext, s: DriveState, a: Agent): HostToolsDeps {
  return {
    getMessages: () => a.state.messages,
    execute: (req, signal) => executeTool(t, s, req, signal),
    onNext: (next) => {
      s.pendingNext = next;
    },
    onRefusal: (code) => {
      if (code === "TURN_TOKEN_INVALID") abortTurn(t, "turn token no longer valid");
    },
  };
}

function newAgent(
  t: TurnContext,
  s: DriveState,
  context: AgentMessage[],
  model: Model<Api>,
  getApiKey: ((provider: string) => string | undefined) | undefined,
): Agent {
  const streamFn: StreamFn = (m, llmContext, options) => {
    s.callTools = llmContext.tools as AgentTool[] | undefined;
    return streamSimple(m, { ...llmContext, tools: s.callTools?.filter((x) => !isForwarder(x)) }, options);
  };
  return new Agent({
    initialState: { systemPrompt: t.assignment.systemPrompt, model, tools: [], messages: context },
    toolExecution: "sequential",
    sessionId: t.assignment.sessionId,
    getApiKey,
    streamFn,
  });
}

/**
 * Streamed text and thinking reach people as they arrive (delta-sender.ts); the final message
 * follows them. Listeners are awaited: the host has the assistant message before its tools run.
 */
async function onAgentEvent(
  t: TurnContext,
  s: DriveState,
  deltas: DeltaSender,
  toolDeps: HostToolsDeps,
  event: AgentEvent,
): Promise<void> {
  if (event.type === "message_update") {
    const e = event.assistantMessageEvent;
    if (e.type === "text_delta") deltas.push("text", e.delta);
    else if (e.type === "thinking_delta") deltas.push("thinking", e.delta);
    else if (e.type === "toolcall_end") deltas.push("toolCall", e.toolCall.name, e.toolCall.id);
    return;
  }
  if (event.type !== "message_end") return;
  const message = event.message;
  if (message.role !== "assistant" && message.role !== "toolResult") return;
  if (t.ownerLost) return;
  if (message.role === "assistant") await deltas.flush();
  const callTools = s.callTools;
  if (message.role === "assistant" && callTools)
    for (const c of message.content)
      if (c.type === "toolCall" && !callTools.some((x) => x.name === c.name))
        callTools.push(forwarderFor(c.name, toolDeps));
  await appendMessage(t, s, message);
}

async function appendMessage(t: TurnContext, s: DriveState, message: AgentMessage): Promise<void> {
  const { deps, fields } = t;
  const { turnId, token } = t.assignment;
  try {
    // pi-ai messages are plain JSON objects: the wire type is a record. A failed call's text
    // leaves the worker without the worker's secrets (provider-text.ts).
    const wire = withoutProviderSecrets(message, deps.redact) as unknown as Record<string, unknown>;
    await callBounded(deps.nc, deps.client, "append", { turnId, token, messages: [wire] });
  } catch (err) {
    if (isAppError(err) && err.code === "TURN_TOKEN_INVALID") return; // the run parked or was aborted
    if (ownerGone(err)) return loseOwner(t, err);
    s.failure ??= `append failed (${describe(err)})`;
    deps.log.error("turn.append_failed", { ...fields, role: message.role, ...errorFields(err) });
    abortTurn(t, "the transcript could not be appended");
  }
}

/** Runs the Agent until it stops without a mode switch to continue under; returns its run error. */
async function continueAcrossModes(
  t: TurnContext,
  s: DriveState,
  a: Agent,
  toolsFor: (specs: readonly ToolSpec[]) => AgentTool[],
): Promise<string | undefined> {
  for (;;) {
    try {
      await a.continue();
    } catch (err) {
      return describe(err);
    }
    const next = s.pendingNext;
    s.pendingNext = undefined;
    const last = a.state.messages.at(-1);
    if (!next || t.stop.signal.aborted || s.failure || last?.role !== "toolResult") return undefined;
    // EnterPlanMode committed the mode: the same turn continues with the new prompt and tools.
    s.mode = next.mode;
    a.state.systemPrompt = next.systemPrompt;
    a.state.tools = toolsFor(next.tools);
    t.deps.log.info("turn.mode_switched", {
      ...t.fields,
      mode: s.mode,
      tools: next.tools.map((x) => x.name),
    });
  }
}

function driveOutcome(
  t: TurnContext,
  s: DriveState,
  produced: AgentMessage[],
  runError: string | undefined,
): TurnOutcome {
  if (s.failure) return { status: "error", error: s.failure };
  if (t.abortReason !== undefined) return { status: "error", error: `aborted: ${t.abortReason}` };
  if (runError) return { status: "error", error: runError };
  const lastAssistant = produced.findLast((m) => m.role === "assistant");
  if (lastAssistant?.role === "assistant" && lastAssistant.stopReason === "error") {
    // The provider's own words, and the code they mean (provider-errors.ts). Classified before
    // endTurn redacts them: the code is one of a closed set and carries no secret, and a removed
    // value can then never change which code a failure gets.
    const error = lastAssistant.errorMessage || "the model call failed";
    return { status: "error", error, code: classifyProviderFailure(error) };
  }
  if (lastAssistant?.role === "assistant" && lastAssistant.stopReason === "aborted") {
    return { status: "error", error: lastAssistant.errorMessage || "aborted" };
  }
  return { status: "completed" };
}

/** Runs the turn's Agent over `context` with `model` and says how the turn went. */
export async function drive(
  t: TurnContext,
  context: AgentMessage[],
  model: Model<Api>,
  getApiKey: ((provider: string) => string | undefined) | undefined,
): Promise<TurnOutcome> {
  const { assignment, deps } = t;
  const s: DriveState = {
    mode: assignment.mode,
    pendingNext: undefined,
    failure: undefined,
    callTools: undefined,
  };
  const a = newAgent(t, s, context, model, getApiKey);
  const toolDeps = hostToolDeps(t, s, a);
  const toolsFor = (specs: readonly ToolSpec[]) => buildHostTools(specs, toolDeps);
  a.state.tools = toolsFor(assignment.tools);
  t.agent = a;
  const deltas = createDeltaSender({
    client: deps.client,
    turnId: assignment.turnId,
    token: assignment.token,
  });
  a.subscribe((event) => onAgentEvent(t, s, deltas, toolDeps, event));

  const start = a.state.messages.length;
  const runError = await continueAcrossModes(t, s, a, toolsFor);
  return driveOutcome(t, s, a.state.messages.slice(start), runError);
}
