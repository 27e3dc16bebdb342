// Agent-worker methods (`<prefix>.agent.<method>`, docs/protocol.md): claim, context, append,
// heartbeat, turn.end and tools.execute. Every call but claim carries the turn's capability token,
// checked before anything else; tools.execute then delegates to the tool pipeline (sessions/).
import { AppError } from "../../protocol/app-error.ts";
import { type Result, unwrap } from "../../protocol/result.ts";
import { type BodyParts, createBodyParts } from "./body-parts.ts";
import type { Clock } from "../clock.ts";
import { redactSecrets } from "../../runtime/secret-redaction.ts";
import { sanitizeText, unsafeTextPath } from "../../protocol/text-safety.ts";
import {
  AppendParams,
  BodyPartParams,
  BodyPartsRef,
  DeltaParams,
  ContextParams,
  decodeParams,
  HeartbeatParams,
  ToolsExecuteParams,
  TurnEndParams,
} from "../../protocol/schemas.ts";
import type { ParamsOf, ResultOf } from "../../protocol/methods.ts";
import { type AgentMethod, SUBJECT_TOKEN } from "../../protocol/subjects.ts";
import type { Audience, EventPublisher } from "../sessions/events/event-publisher.ts";
import type { LiveOutput } from "../sessions/events/live-output.ts";
import type { SessionSupervisor } from "../sessions/actors/session-supervisor.ts";
import { textOf, type ToolPipeline } from "../sessions/pipeline/tool-pipeline.ts";
import type { Lease, TurnDispatcher } from "../sessions/turns/turn-dispatcher.ts";
import { type Db, withTransaction } from "../store/db.ts";
import { executionOfTurn } from "../store/session-facts.ts";
import type { SessionStore } from "../store/session-store.ts";

/**
 * A worker method's handler: the body as sent (its turn token is checked before the body is decoded,
 * docs/protocol.md "Agent-worker protocol"), answering its method's result.
 */
export type AgentHandler<M extends AgentMethod = AgentMethod> = (params: unknown) => Promise<ResultOf<M>>;
/** Every worker method's handler. */
export type AgentHandlers = { [M in AgentMethod]: AgentHandler<M> };
/** A test hook (test-hooks.ts, PI_TEST_HOOKS=1; no entry in the METHODS table): its params as sent, its outcome a Result. */
export type HookHandler = (params: unknown) => Promise<Result<unknown>>;

/** The longest worker-given reason a turn.ended event carries. */
const TURN_END_REASON_CHARS = 1000;

/**
 * The worker an agent request proves to be from, for the reply rule (reply-rules.ts): a claim's
 * `workerId` (its token is then sent only to that worker's inbox), or the worker holding the lease
 * of a valid turn token; null otherwise (the handler refuses such a request, and nothing is done).
 */
export function workerOfRequest(
  dispatcher: Pick<TurnDispatcher, "check">,
): (method: string, body: unknown) => string | null {
  return (method, body) => {
    const b = (typeof body === "object" && body !== null ? body : {}) as Record<string, unknown>;
    if (method === "claim")
      return typeof b.workerId === "string" && SUBJECT_TOKEN.test(b.workerId) ? b.workerId : null;
    return dispatcher.check(b.turnId, b.token)?.workerId ?? null;
  };
}

/** What the worker methods need: the stores, the session actors, the turn leases and the tool pipeline. */
export interface AgentApiDeps {
  db: Db;
  sessions: SessionStore;
  supervisor: SessionSupervisor;
  dispatcher: TurnDispatcher;
  events: EventPublisher;
  /** tools.execute: admission, policy, prompt, run and record (sessions/pipeline/tool-pipeline.ts). */
  tools: ToolPipeline;
  /** A context page's bound in encoded bytes (from the server's max_payload). */
  maxPageBytes?: number;
  /** Bodies too big for one message, sent in parts (body-parts.ts). */
  parts?: BodyParts;
  /** Streamed model output, published live (sessions/events/live-output.ts); none: deltas are accepted and dropped. */
  live?: Pick<LiveOutput, "push">;
}

/** The token check that precedes everything else: a missing, revoked or foreign token is refused. */
function authorize(dispatcher: TurnDispatcher, params: unknown): Lease {
  const p = (typeof params === "object" && params !== null ? params : {}) as Record<string, unknown>;
  const lease = dispatcher.check(p.turnId, p.token);
  if (!lease || ("sessionId" in p && p.sessionId !== lease.sessionId))
    throw new AppError("TURN_TOKEN_INVALID");
  return lease;
}

async function audienceOf(deps: AgentApiDeps, sessionId: string): Promise<Audience> {
  const row = await deps.sessions.getRow(deps.db, sessionId);
  return { sessionId, owner: row.owner, approvers: row.approvers };
}

async function claim(deps: AgentApiDeps, params: unknown): Promise<ResultOf<"claim">> {
  const { db, supervisor, dispatcher } = deps;
  // No token to check first: the bus decoded it by its schema already (host-bus.ts decodeBody).
  const p = params as ParamsOf<"claim">;
  const offer = dispatcher.take(p.turnId);
  if (!offer) {
    // An execution that was already claimed, ended or fenced says so with its own code.
    const exec = await executionOfTurn(db, p.turnId);
    if (exec && exec.executionState !== "queued") throw new AppError("PLAN_EXECUTION_STALE");
    throw new AppError("TURN_NOT_CLAIMABLE");
  }
  try {
    return await supervisor.request<ResultOf<"claim">>(offer.sessionId, (reply) => ({
      type: "CLAIM",
      turnId: p.turnId,
      workerId: p.workerId,
      reply,
    }));
  } catch (err) {
    // A transient failure keeps the turn claimable; a refusal (stale, mismatch) does not.
    if (!(err instanceof AppError) || err.code === "INTERNAL") dispatcher.restore(offer);
    throw err;
  }
}

async function context(deps: AgentApiDeps, params: unknown): Promise<ResultOf<"context">> {
  const lease = authorize(deps.dispatcher, params);
  const p = decodeParams(ContextParams, params);
  return deps.sessions.transcriptPage(
    lease.sessionId,
    p.cursor ?? 0,
    p.limit ?? 200,
    deps.maxPageBytes,
    p.part,
  );
}

async function append(deps: AgentApiDeps, params: unknown): Promise<ResultOf<"append">> {
  const { db, sessions, events } = deps;
  const lease = authorize(deps.dispatcher, params);
  // Model text is repaired, not refused: a NUL or lone surrogate becomes U+FFFD (text-safety.ts).
  const p = decodeParams(AppendParams, sanitizeText(params).value);
  const to = await audienceOf(deps, lease.sessionId);
  for (const message of p.messages) {
    if (message.role !== "assistant" && message.role !== "toolResult") {
      throw new AppError("INVALID_PARAMS", "workers append only assistant and toolResult messages");
    }
  }
  await withTransaction(db, async (tx) => {
    for (const message of p.messages)
      await sessions.appendTranscript(tx, lease.sessionId, lease.turnId, message);
  });
  for (const message of p.messages) {
    if (message.role !== "assistant") continue;
    const text = textOf(message.content);
    if (text) events.publish(to, "message", { turnId: lease.turnId, role: "assistant", text });
    for (const c of Array.isArray(message.content) ? message.content : []) {
      if (c?.type === "toolCall") {
        events.publish(to, "tool.called", {
          turnId: lease.turnId,
          toolCallId: String(c.id),
          tool: String(c.name),
          args: c.arguments ?? {},
        });
      }
    }
  }
  return { appended: p.messages.length };
}

async function heartbeat(deps: AgentApiDeps, params: unknown): Promise<ResultOf<"heartbeat">> {
  const lease = authorize(deps.dispatcher, params);
  decodeParams(HeartbeatParams, params);
  deps.dispatcher.beat(lease);
  return { ok: true, leaseMs: undefined };
}

async function turnEnd(deps: AgentApiDeps, params: unknown): Promise<ResultOf<"turn.end">> {
  const lease = authorize(deps.dispatcher, params);
  const p = decodeParams(TurnEndParams, params);
  // A stopped worker's turn is aborted (WORKER_STOPPED), never handed to another worker; a
  // failure the worker named (a provider's: PROVIDER_*, CONTEXT_TOO_LARGE, MODEL_NOT_CONFIGURED)
  // keeps its code, any other is TOOL_FAILED; the worker's reason reaches turn.ended.
  const stopped = p.status === "error" && p.code === "WORKER_STOPPED";
  return deps.supervisor.request<ResultOf<"turn.end">>(lease.sessionId, (reply) => ({
    type: "TURN_ENDED",
    turnId: lease.turnId,
    status: stopped ? "aborted" : p.status,
    ...(p.status === "error" ? { code: p.code ?? "TOOL_FAILED" } : {}),
    // Credential shapes go before the reason is stored or published, whatever the worker sent.
    ...(p.status === "error" && p.error
      ? { reason: redactSecrets(p.error).slice(0, TURN_END_REASON_CHARS) }
      : {}),
    reply,
  }));
}

async function toolsExecute(deps: AgentApiDeps, params: unknown): Promise<ResultOf<"tools.execute">> {
  const lease = authorize(deps.dispatcher, params);
  // Arguments are the model's: text Postgres cannot store in them is a refusal the model sees
  // (recorded like any other), not a failed request; the rest of the body is checked as always.
  const body = params as Record<string, unknown>;
  const bad = unsafeTextPath(body.args, "/args");
  // A refusal of the request itself (not a result the model sees) is thrown as its AppError.
  if (bad === null) return unwrap(await deps.tools.execute(lease, decodeParams(ToolsExecuteParams, params)));
  return unwrap(
    await deps.tools.execute(lease, decodeParams(ToolsExecuteParams, { ...body, args: {} }), {
      argsProblem: bad,
    }),
  );
}

async function delta(deps: AgentApiDeps, params: unknown): Promise<ResultOf<"delta">> {
  const lease = authorize(deps.dispatcher, params);
  const p = decodeParams(DeltaParams, sanitizeText(params).value);
  deps.live?.push(lease.sessionId, lease.turnId, p.kind, p.text, p.toolCallId);
  return { ok: true };
}

async function bodyPart(
  deps: AgentApiDeps,
  parts: BodyParts,
  params: unknown,
): Promise<ResultOf<"body.part">> {
  authorize(deps.dispatcher, params);
  // The worker handlers answer their result or throw (AgentHandler): a refusal unwinds from here.
  return unwrap(parts.put(decodeParams(BodyPartParams, params)));
}

/**
 * A token method's body may come in parts: `{turnId, token, bodyParts}` stands for the assembled
 * body, which must carry the same turn and token; the method then runs on it as sent whole.
 */
function withParts<M extends AgentMethod>(
  deps: AgentApiDeps,
  parts: BodyParts,
  handler: AgentHandler<M>,
): AgentHandler<M> {
  return async (params) => {
    const p = params as Record<string, unknown> | null;
    if (typeof p !== "object" || p === null || !("bodyParts" in p)) return handler(params);
    authorize(deps.dispatcher, params);
    const ref = decodeParams(BodyPartsRef, params);
    const body = unwrap(parts.take(ref.turnId, ref.bodyParts));
    if (body.turnId !== ref.turnId || body.token !== ref.token)
      throw new AppError("INVALID_PARAMS", "a body in parts must carry the turn and token of its request");
    return handler(body);
  };
}

export function createAgentApi(deps: AgentApiDeps): AgentHandlers {
  const parts = deps.parts ?? createBodyParts({ clock: { now: Date.now, date: () => new Date() } as Clock });
  const handlers: AgentHandlers = {
    claim: (params) => claim(deps, params),
    context: (params) => context(deps, params),
    append: (params) => append(deps, params),
    heartbeat: (params) => heartbeat(deps, params),
    "turn.end": (params) => turnEnd(deps, params),
    "tools.execute": (params) => toolsExecute(deps, params),
    delta: (params) => delta(deps, params),
    "body.part": (params) => bodyPart(deps, parts, params),
  };
  handlers.append = withParts(deps, parts, handlers.append);
  handlers["tools.execute"] = withParts(deps, parts, handlers["tools.execute"]);
  return handlers;
}
