// Agent-worker methods (`<prefix>.agent.<method>`, docs/protocol.md): claim, context, append,
// heartbeat, turn.end and tools.execute. Every call but claim carries the turn's capability token,
// checked before anything else; tools.execute then delegates to the tool pipeline (sessions/).
import { AppError } from "../../protocol/app-error.ts";
import { type Result, unwrap } from "../../protocol/result.ts";
import { type BodyParts, createBodyParts } from "./body-parts.ts";
import type { Clock } from "../clock.ts";
import { redactSecrets } from "../../runtime/secret-redaction.ts";
import { sanitizeText, unsafeTextPath } from "../../protocol/text-safety.ts";
import { BodyPartsRef, decodeParams } from "../../protocol/schemas.ts";
import { METHODS, type ParamsOf, type ResultOf } from "../../protocol/methods.ts";
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
/** The worker methods a turn token gates (all but claim). */
export type TokenMethod = Exclude<AgentMethod, "claim">;
/**
 * A token method's handler: the lease its token proved and its params decoded once, by its METHODS
 * schema, in `tokenGated` (the one place a worker body is checked and decoded).
 */
export type TokenHandler<M extends TokenMethod> = (
  lease: Lease,
  params: ParamsOf<M>,
  argsProblem: string | undefined,
) => Promise<ResultOf<M>>;
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

async function claim(deps: AgentApiDeps, p: ParamsOf<"claim">): Promise<ResultOf<"claim">> {
  const { db, supervisor, dispatcher } = deps;
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

async function context(
  deps: AgentApiDeps,
  lease: Lease,
  p: ParamsOf<"context">,
): Promise<ResultOf<"context">> {
  return deps.sessions.transcriptPage(
    lease.sessionId,
    p.cursor ?? 0,
    p.limit ?? 200,
    deps.maxPageBytes,
    p.part,
  );
}

async function append(deps: AgentApiDeps, lease: Lease, p: ParamsOf<"append">): Promise<ResultOf<"append">> {
  const { db, sessions, events } = deps;
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

async function heartbeat(deps: AgentApiDeps, lease: Lease): Promise<ResultOf<"heartbeat">> {
  deps.dispatcher.beat(lease);
  return { ok: true, leaseMs: undefined };
}

async function turnEnd(
  deps: AgentApiDeps,
  lease: Lease,
  p: ParamsOf<"turn.end">,
): Promise<ResultOf<"turn.end">> {
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

async function toolsExecute(
  deps: AgentApiDeps,
  lease: Lease,
  p: ParamsOf<"tools.execute">,
  argsProblem: string | undefined,
): Promise<ResultOf<"tools.execute">> {
  // A refusal of the request itself (not a result the model sees) is thrown as its AppError.
  return unwrap(await deps.tools.execute(lease, p, argsProblem === undefined ? {} : { argsProblem }));
}

async function delta(deps: AgentApiDeps, lease: Lease, p: ParamsOf<"delta">): Promise<ResultOf<"delta">> {
  deps.live?.push(lease.sessionId, lease.turnId, p.kind, p.text, p.toolCallId);
  return { ok: true };
}

/** Token methods whose body may come in parts (body-parts.ts). */
const IN_PARTS: ReadonlySet<TokenMethod> = new Set(["append", "tools.execute"]);
/** Token methods whose model text is repaired, not refused: a NUL or lone surrogate becomes U+FFFD (text-safety.ts). */
const REPAIRED: ReadonlySet<TokenMethod> = new Set(["append", "delta"]);

/**
 * A token method's body may come in parts: `{turnId, token, bodyParts}` stands for the assembled
 * body, which must carry the same turn and token; the method then runs on it as sent whole.
 */
function assembled(deps: AgentApiDeps, parts: BodyParts, raw: unknown): unknown {
  const p = raw as Record<string, unknown> | null;
  if (typeof p !== "object" || p === null || !("bodyParts" in p)) return raw;
  const ref = decodeParams(BodyPartsRef, raw);
  const body = unwrap(parts.take(ref.turnId, ref.bodyParts));
  if (body.turnId !== ref.turnId || body.token !== ref.token)
    throw new AppError("INVALID_PARAMS", "a body in parts must carry the turn and token of its request");
  // The same token again, and the body's own sessionId, if it names one, must be the token's.
  authorize(deps.dispatcher, body);
  return body;
}

/**
 * The gate of every token method, in the order docs/protocol.md gives: the token first (nothing else
 * is read of a body without a valid one), then the body assembled from its parts, the model's text
 * repaired, and the body decoded once by the method's METHODS schema. tools.execute's arguments with
 * text Postgres cannot store are a refusal the model sees (recorded like any other), not a failed
 * request: they are set aside and named to the pipeline, and the rest of the body is checked as always.
 */
function tokenGated<M extends TokenMethod>(
  deps: AgentApiDeps,
  parts: BodyParts,
  method: M,
  handler: TokenHandler<M>,
): AgentHandler<M> {
  const schema = METHODS[method].params;
  return async (raw) => {
    const lease = authorize(deps.dispatcher, raw);
    let body = IN_PARTS.has(method) ? assembled(deps, parts, raw) : raw;
    if (REPAIRED.has(method)) body = sanitizeText(body).value;
    let argsProblem: string | undefined;
    if (method === "tools.execute") {
      const b = body as Record<string, unknown>;
      argsProblem = unsafeTextPath(b.args, "/args") ?? undefined;
      if (argsProblem !== undefined) body = { ...b, args: {} };
    }
    return handler(lease, decodeParams(schema, body) as ParamsOf<M>, argsProblem);
  };
}

export function createAgentApi(deps: AgentApiDeps): AgentHandlers {
  const parts = deps.parts ?? createBodyParts({ clock: { now: Date.now, date: () => new Date() } as Clock });
  const gated = <M extends TokenMethod>(method: M, handler: TokenHandler<M>) =>
    tokenGated(deps, parts, method, handler);
  return {
    // No token to check first: the bus decoded its body by its schema already (host-bus.ts decodeBody).
    claim: (params) => claim(deps, params as ParamsOf<"claim">),
    context: gated("context", (lease, p) => context(deps, lease, p)),
    append: gated("append", (lease, p) => append(deps, lease, p)),
    heartbeat: gated("heartbeat", (lease) => heartbeat(deps, lease)),
    "turn.end": gated("turn.end", (lease, p) => turnEnd(deps, lease, p)),
    "tools.execute": gated("tools.execute", (lease, p, argsProblem) =>
      toolsExecute(deps, lease, p, argsProblem),
    ),
    delta: gated("delta", (lease, p) => delta(deps, lease, p)),
    // The worker handlers answer their result or throw (AgentHandler): a refusal unwinds from here.
    "body.part": gated("body.part", async (_lease, p) => unwrap(parts.put(p))),
  };
}
