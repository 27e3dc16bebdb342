// Runs one claimed turn: fetches the context, keeps the lease alive, drives the pi Agent, appends
// the transcript and ends the turn. Everything goes through the host's agent methods over NATS.
import { Agent, type AgentMessage, type AgentTool, type StreamFn } from "@mariozechner/pi-agent-core";
import { type Api, type Model, streamSimple } from "@mariozechner/pi-ai";
import type { NatsConnection, Subscription } from "@nats-io/nats-core";
import { isAppError } from "../protocol/app-error.ts";
import { errorFields, type Logger } from "../runtime/log.ts";
import type { TypedAgentClient } from "../protocol/rpc-client.ts";
import type { OperatingMode, ToolExecuteResult, ToolSpec, TurnAssignment } from "../protocol/schemas.ts";
import { turnCancelSubject } from "../protocol/subjects.ts";
import { buildHostTools, forwarderFor, isForwarder, type ToolCallRequest } from "./agent-tools.ts";
import { callBounded, createPartJoiner } from "./bounded-call.ts";
import { createDeltaSender } from "./delta-sender.ts";
import type { ModelRegistry } from "./models-config.ts";
import { classifyProviderFailure } from "./provider-errors.ts";
import { type Redact, withoutProviderSecrets } from "./provider-text.ts";
import type { TurnFailureCode } from "../protocol/agent-schemas.ts";
import { resolveModel } from "./model-resolver.ts";

export const CONTEXT_PAGE_LIMIT = 200;
/** tools.execute is safe to repeat (the host returns the recorded result), so lost replies are retried. */
const TOOL_ATTEMPTS = 3;
const MAX_ERROR_TEXT = 4000;

export interface TurnRunnerDeps {
  nc: NatsConnection;
  prefix: string;
  /** The worker's bus identity: its turns' cancels arrive under it. */
  workerId: string;
  /** claim/context/append/heartbeat/turn.end: short timeout. */
  client: TypedAgentClient;
  /** tools.execute: long timeout (a tool may wait for a person's permission). */
  toolClient: TypedAgentClient;
  log: Logger;
  scriptedCallLog?: string | undefined;
  /** The models this worker can run (models-config.ts). */
  models: ModelRegistry;
  /** Removes the worker's keys, header values and credential shapes from provider text (provider-text.ts). */
  redact: Redact;
}

export interface RunningTurn {
  turnId: string;
  /**
   * Aborts the Agent; the turn still ends (turn.end) before `done` resolves, with `code` when the
   * worker knows why (WORKER_STOPPED: it is stopping).
   */
  abort(reason: string, code?: "WORKER_STOPPED"): void;
  /** Resolves when the turn is over for this worker; never rejects. */
  done: Promise<void>;
}

type TurnOutcome = { status: "completed" } | { status: "error"; error: string; code?: TurnFailureCode };

function isTransportError(err: unknown): boolean {
  return isAppError(err) && err.details?.transport === true;
}

/**
 * The host the worker talks to no longer owns the turn: it was taken over (SESSION_LEASE_LOST, or
 * HOST_FENCED for a host superseded whole) or is gone (nobody listens on its subjects). The turn is
 * then the new owner's to end (its fence announces it): the worker stops, reports nothing more.
 */
function ownerGone(err: unknown): boolean {
  if (!isAppError(err)) return false;
  return (
    err.code === "SESSION_LEASE_LOST" ||
    err.code === "HOST_FENCED" ||
    (err.code === "HOST_UNAVAILABLE" && err.details?.noResponders === true)
  );
}

function describe(err: unknown): string {
  if (isAppError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}

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

/** Starts running `assignment` at once; the returned handle aborts it and reports when it is over. */
export function startTurn(assignment: TurnAssignment, deps: TurnRunnerDeps): RunningTurn {
  const { turnId, sessionId, token } = assignment;
  const fields = { turnId, sessionId, kind: assignment.kind };
  const stop = new AbortController();
  let abortReason: string | undefined;
  let abortCode: "WORKER_STOPPED" | undefined;
  let agent: Agent | undefined;
  /** Set when the owning host lost the turn (ownerGone): nothing more is sent about it. */
  let ownerLost = false;
  const loseOwner = (err: unknown) => {
    if (ownerLost) return;
    ownerLost = true;
    deps.log.warn("turn.owner_lost", { ...fields, ...errorFields(err) });
    abort("the host no longer owns this turn");
  };

  const abort = (reason: string, code?: "WORKER_STOPPED") => {
    if (stop.signal.aborted) return;
    abortReason = reason;
    abortCode = code;
    deps.log.info("turn.abort", { ...fields, reason });
    stop.abort();
    agent?.abort();
  };

  const done = run().catch((err) => {
    deps.log.error("turn.crashed", { ...fields, ...errorFields(err) });
  });
  return { turnId, abort, done };

  async function run(): Promise<void> {
    deps.log.info("turn.started", { ...fields, mode: assignment.mode, model: assignment.model.model });
    const cancelSub: Subscription = deps.nc.subscribe(turnCancelSubject(deps.prefix, deps.workerId, turnId), {
      callback: () => abort("cancelled by the host"),
    });
    const stopHeartbeats = startHeartbeats();
    let outcome: TurnOutcome;
    try {
      outcome = await execute();
    } catch (err) {
      outcome = { status: "error", error: describe(err) };
    } finally {
      stopHeartbeats();
      cancelSub.unsubscribe();
    }
    if (abortReason !== undefined && outcome.status === "completed") {
      outcome = { status: "error", error: `aborted: ${abortReason}` };
    }
    if (abortCode && outcome.status === "error") outcome = { ...outcome, code: abortCode };
    await endTurn(outcome);
  }

  function startHeartbeats(): () => void {
    const every = Math.max(50, assignment.heartbeatMs || 3_000);
    const leaseMs = Math.max(every, assignment.leaseMs || every * 5);
    let lastOk = Date.now();
    let inFlight = false;
    const timer = setInterval(async () => {
      if (inFlight || stop.signal.aborted) return;
      inFlight = true;
      try {
        await deps.client.call("heartbeat", { turnId, token });
        lastOk = Date.now();
      } catch (err) {
        if (ownerGone(err) && !isTransportError(err)) {
          loseOwner(err);
        } else if (!isTransportError(err)) {
          abort(`heartbeat refused (${describe(err)})`);
        } else if (Date.now() - lastOk > leaseMs) {
          // Unanswered for a whole lease: the host is gone or cut off, and another may own the turn.
          loseOwner(err);
        } else {
          deps.log.warn("turn.heartbeat_unanswered", { ...fields, ...errorFields(err) });
        }
      } finally {
        inFlight = false;
      }
    }, every);
    return () => clearInterval(timer);
  }

  async function fetchContext(): Promise<AgentMessage[]> {
    const messages: AgentMessage[] = [];
    const joiner = createPartJoiner();
    let cursor: number | undefined;
    let part: number | undefined;
    for (;;) {
      const params = {
        turnId,
        token,
        limit: CONTEXT_PAGE_LIMIT,
        ...(cursor === undefined ? {} : { cursor }),
        ...(part === undefined ? {} : { part }),
      };
      const page = await deps.client.call("context", params);
      // The host stores what workers appended: pi-ai messages (docs/protocol.md, `context`); an
      // entry too big for a page comes in parts, joined here.
      messages.push(...(joiner.add(page.messages) as AgentMessage[]));
      if (page.nextCursor === null || page.nextCursor === undefined || stop.signal.aborted) {
        if (joiner.partial()) throw new Error("the context ended inside an entry sent in parts");
        return messages;
      }
      if (page.nextCursor === cursor && page.nextPart === part)
        throw new Error(`context cursor did not advance (${cursor})`);
      cursor = page.nextCursor;
      part = page.nextPart;
    }
  }

  async function execute(): Promise<TurnOutcome> {
    const context = await fetchContext();
    if (stop.signal.aborted) return { status: "error", error: `aborted: ${abortReason}` };

    const resolved = resolveModel(
      assignment.model,
      { sessionId, turnId, scriptedCallLog: deps.scriptedCallLog },
      deps.models,
    );
    if (!resolved.ok) {
      deps.log.warn("turn.model_unavailable", { ...fields, error: resolved.error });
      return { status: "error", error: resolved.error, code: resolved.code };
    }
    try {
      return await drive(context, resolved.model, resolved.getApiKey);
    } finally {
      resolved.dispose();
    }
  }

  async function drive(
    context: AgentMessage[],
    model: Model<Api>,
    getApiKey: ((provider: string) => string | undefined) | undefined,
  ): Promise<TurnOutcome> {
    let mode: OperatingMode = assignment.mode;
    let pendingNext: NonNullable<ToolExecuteResult["next"]> | undefined;
    let failure: string | undefined;

    const executeTool = async (req: ToolCallRequest, signal?: AbortSignal): Promise<ToolExecuteResult> => {
      const params = { sessionId, turnId, token, ...req, requestedMode: mode };
      for (let attempt = 1; ; attempt++) {
        try {
          // Arguments too big for one message travel in parts (bounded-call.ts).
          return await abortable(callBounded(deps.nc, deps.toolClient, "tools.execute", params), signal);
        } catch (err) {
          // The owner lost the turn: this call's outcome is the new owner's record
          // (TOOL_OUTCOME_UNKNOWN), never a result the model sees.
          if (ownerGone(err) && (!isTransportError(err) || attempt >= TOOL_ATTEMPTS)) loseOwner(err);
          if (!isTransportError(err) || attempt >= TOOL_ATTEMPTS || signal?.aborted || ownerLost) throw err;
          await new Promise((r) => setTimeout(r, 200 * attempt));
          deps.log.warn("turn.tool_retry", {
            ...fields,
            toolCallId: req.toolCallId,
            attempt,
            ...errorFields(err),
          });
        }
      }
    };
    const toolDeps = {
      getMessages: () => a.state.messages,
      execute: executeTool,
      onNext: (next: NonNullable<ToolExecuteResult["next"]>) => {
        pendingNext = next;
      },
      onRefusal: (code: string) => {
        if (code === "TURN_TOKEN_INVALID") abort("turn token no longer valid");
      },
    };
    const toolsFor = (specs: readonly ToolSpec[]) => buildHostTools(specs, toolDeps);

    // The tool list of the model call in flight (the loop's own array): a name the model calls
    // that is not in it gets a forwarder there, so the host decides that call too; forwarders are
    // never offered to the model (docs/protocol.md "Agent-worker protocol").
    let callTools: AgentTool[] | undefined;
    const streamFn: StreamFn = (m, llmContext, options) => {
      callTools = llmContext.tools as AgentTool[] | undefined;
      return streamSimple(m, { ...llmContext, tools: callTools?.filter((t) => !isForwarder(t)) }, options);
    };

    const a = new Agent({
      initialState: { systemPrompt: assignment.systemPrompt, model, tools: [], messages: context },
      toolExecution: "sequential",
      sessionId,
      getApiKey,
      streamFn,
    });
    a.state.tools = toolsFor(assignment.tools);
    agent = a;
    // Streamed text and thinking reach people as they arrive (delta-sender.ts); the final message
    // follows them. Listeners are awaited: the host has the assistant message before its tools run.
    const deltas = createDeltaSender({ client: deps.client, turnId, token });
    a.subscribe(async (event) => {
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
      if (ownerLost) return;
      if (message.role === "assistant") await deltas.flush();
      if (message.role === "assistant" && callTools)
        for (const c of message.content)
          if (c.type === "toolCall" && !callTools.some((t) => t.name === c.name))
            callTools.push(forwarderFor(c.name, toolDeps));
      try {
        // pi-ai messages are plain JSON objects: the wire type is a record. A failed call's text
        // leaves the worker without the worker's secrets (provider-text.ts).
        const wire = withoutProviderSecrets(message, deps.redact) as unknown as Record<string, unknown>;
        await callBounded(deps.nc, deps.client, "append", { turnId, token, messages: [wire] });
      } catch (err) {
        if (isAppError(err) && err.code === "TURN_TOKEN_INVALID") return; // the run parked or was aborted
        if (ownerGone(err)) return loseOwner(err);
        failure ??= `append failed (${describe(err)})`;
        deps.log.error("turn.append_failed", { ...fields, role: message.role, ...errorFields(err) });
        abort("the transcript could not be appended");
      }
    });

    const start = a.state.messages.length;
    let runError: string | undefined;
    for (;;) {
      try {
        await a.continue();
      } catch (err) {
        runError = describe(err);
        break;
      }
      const next = pendingNext;
      pendingNext = undefined;
      const last = a.state.messages.at(-1);
      if (!next || stop.signal.aborted || failure || last?.role !== "toolResult") break;
      // EnterPlanMode committed the mode: the same turn continues with the new prompt and tools.
      mode = next.mode;
      a.state.systemPrompt = next.systemPrompt;
      a.state.tools = toolsFor(next.tools);
      deps.log.info("turn.mode_switched", { ...fields, mode, tools: next.tools.map((t) => t.name) });
    }

    if (failure) return { status: "error", error: failure };
    if (abortReason !== undefined) return { status: "error", error: `aborted: ${abortReason}` };
    if (runError) return { status: "error", error: runError };
    const produced = a.state.messages.slice(start);
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

  async function endTurn(outcome: TurnOutcome): Promise<void> {
    if (ownerLost) {
      // The new owner ended it (its takeover aborted the turn and announced that).
      deps.log.info("turn.ended", { ...fields, status: "aborted", ownerLost: true });
      return;
    }
    // Redacted whole, then cut: a cut first could leave half a key that no longer matches.
    const error =
      outcome.status === "error" ? deps.redact(outcome.error).slice(0, MAX_ERROR_TEXT) : undefined;
    const params = {
      turnId,
      token,
      status: outcome.status,
      ...(error === undefined ? {} : { error }),
      ...(outcome.status === "error" && outcome.code ? { code: outcome.code } : {}),
    };
    try {
      await deps.client.call("turn.end", params);
      deps.log.info("turn.ended", { ...fields, status: outcome.status, error });
    } catch (err) {
      if (isAppError(err) && err.code === "TURN_TOKEN_INVALID") {
        // Normal: the run parked (ExitPlanMode) or the host ended the turn itself.
        deps.log.info("turn.ended", { ...fields, status: outcome.status, error, hostAlreadyEnded: true });
        return;
      }
      deps.log.warn("turn.end_failed", { ...fields, ...errorFields(err) });
    }
  }
}
