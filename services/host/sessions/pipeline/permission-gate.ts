// Permission prompts (docs/architecture.md, "Tools"): a `prompt` decision becomes a permission_requests
// row, a `permission.requested` event and a wait on the host clock; exactly one of resolve, deadline and
// turn abort settles it (a conditional UPDATE). Waiters live in memory; the startup fence denies the rest.
import type { ErrorCode } from "../../../protocol/error-codes.ts";
import { ok, type Result, refuse } from "../../../protocol/result.ts";
import type { Logger } from "../../../runtime/log.ts";
import { boundPage } from "../../store/bounded-page.ts";
import type {
  PermissionDecision,
  PermissionRequestList,
  PermissionRequestView,
  PermissionRisk,
  PermissionsPendingParams,
  PermissionsResolveParams,
} from "../../../protocol/permission-schemas.ts";
import { appendAudit } from "../../store/audit-log.ts";
import type { Clock, TimerHandle } from "../../clock.ts";
import { type Db, type Tx, withRefusableTransaction, withTransaction } from "../../store/db.ts";
import type { Audience, EventPublisher } from "../events/event-publisher.ts";
import { newId } from "../../ids.ts";
import {
  answerRequest,
  denyPendingRequest,
  insertPermissionRequest,
  lockRequestForAnswer,
  type PermissionRequestRow,
  pendingRequestsFor,
} from "../../store/permission-requests.ts";
import { canAccess } from "../../store/session-store.ts";

export type GateOutcome =
  | { kind: "allow"; decision: "allow-once" | "allow-session"; principal: string }
  | {
      kind: "deny";
      code: Extract<ErrorCode, "PERMISSION_DENIED" | "PERMISSION_TIMEOUT" | "PERMISSION_INTERRUPTED">;
    };

interface Waiter {
  requestId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  to: Audience;
  timer: TimerHandle;
  settle: (o: GateOutcome) => void;
}

const PREVIEW_STRING = 400;
const PREVIEW_KEYS = 20;

/** A bounded, display-only copy of a tool's arguments: long strings cut, nested values summarized. */
export function previewArgs(args: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const keys = Object.keys(args);
  for (const key of keys.slice(0, PREVIEW_KEYS)) {
    const v = args[key];
    if (typeof v === "string") {
      out[key] = v.length > PREVIEW_STRING ? `${v.slice(0, PREVIEW_STRING)}… (${v.length} chars)` : v;
    } else if (v === null || typeof v === "number" || typeof v === "boolean") {
      out[key] = v;
    } else {
      const text = JSON.stringify(v) ?? String(v);
      out[key] =
        text.length > PREVIEW_STRING ? `${text.slice(0, PREVIEW_STRING)}… (${text.length} chars)` : v;
    }
  }
  if (keys.length > PREVIEW_KEYS) out["…"] = `${keys.length - PREVIEW_KEYS} more arguments`;
  return out;
}

type Row = PermissionRequestRow;

function view(r: Row): PermissionRequestView {
  return {
    requestId: r.id,
    sessionId: r.session_id,
    turnId: r.turn_id,
    toolCallId: r.tool_call_id,
    tool: r.tool,
    risk: r.risk ?? "medium",
    preview: r.args_preview ?? {},
    status: r.status,
    decision: r.decision,
    principal: r.principal,
    code: r.code,
    createdAt: new Date(r.created_at).toISOString(),
    deadline: new Date(r.deadline).toISOString(),
    resolvedAt: r.resolved_at ? new Date(r.resolved_at).toISOString() : null,
  };
}

/** What the gate needs: the rows, the host clock for deadlines and the events it raises. */
export interface PermissionGateDeps {
  db: Db;
  clock: Clock;
  events: EventPublisher;
  log: Logger;
  /** How long a prompt waits for an answer (PI_PERMISSION_TIMEOUT_MS, default 120 s). */
  timeoutMs: number;
}

/** What the gate holds: its deps and the prompts waiting on this host, by request id. */
interface GateState {
  deps: PermissionGateDeps;
  waiters: Map<string, Waiter>;
}

/** A prompt's request as the tool pipeline raises it. */
interface PromptInput {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  risk: PermissionRisk;
  to: Audience;
  worker: string;
}

function publishResolved(g: GateState, w: Waiter, decision: PermissionDecision, code?: ErrorCode) {
  g.deps.events.publish(w.to, "permission.resolved", {
    requestId: w.requestId,
    turnId: w.turnId,
    toolCallId: w.toolCallId,
    tool: w.tool,
    decision,
    ...(code ? { code } : {}),
  });
}

/**
 * The host denies a pending request (deadline or turn abort): a conditional UPDATE, so an answer
 * committed first wins. Fails closed: if the write fails, the waiter is denied all the same.
 */
async function hostDeny(
  g: GateState,
  requestId: string,
  code: "PERMISSION_TIMEOUT" | "PERMISSION_INTERRUPTED",
) {
  const { db, clock, log } = g.deps;
  const { waiters } = g;
  const w = waiters.get(requestId);
  if (!w) return;
  try {
    const changed = await withTransaction(db, async (tx) => {
      if (!(await denyPendingRequest(tx, requestId, code, clock.date()))) return false;
      await appendAudit(tx, {
        at: clock.date(),
        principal: "host",
        sessionId: w.to.sessionId,
        turnId: w.turnId,
        toolCallId: w.toolCallId,
        action: "permission.resolve",
        decision: "deny",
        code,
        details: { requestId, tool: w.tool },
      });
      return true;
    });
    if (!changed) return;
  } catch (err) {
    log.error("permission.deny_failed", { requestId, code, message: String(err) });
  }
  if (waiters.get(requestId) !== w) return;
  publishResolved(g, w, "deny", code);
  w.settle({ kind: "deny", code });
}

/**
 * Creates the request, tells the session's audience and waits for an answer, the deadline or an
 * abort of the turn. Resolves with the outcome; never rejects once the row exists.
 */
async function request(g: GateState, input: PromptInput): Promise<GateOutcome> {
  const { db, clock, events } = g.deps;
  const { waiters } = g;
  const requestId = newId("req");
  const createdAt = clock.date();
  const deadline = new Date(createdAt.getTime() + g.deps.timeoutMs);
  const preview = previewArgs(input.args);
  await withTransaction(db, async (tx) => {
    await insertPermissionRequest(tx, {
      id: requestId,
      sessionId: input.sessionId,
      turnId: input.turnId,
      toolCallId: input.toolCallId,
      tool: input.tool,
      createdAt,
      deadline,
      risk: input.risk,
      preview,
    });
    await appendAudit(tx, {
      at: createdAt,
      principal: input.worker,
      sessionId: input.sessionId,
      turnId: input.turnId,
      toolCallId: input.toolCallId,
      action: "permission.request",
      decision: "prompt",
      details: { requestId, tool: input.tool, risk: input.risk, deadline: deadline.toISOString() },
    });
  });
  const outcome = new Promise<GateOutcome>((resolve) => {
    const w: Waiter = {
      requestId,
      turnId: input.turnId,
      toolCallId: input.toolCallId,
      tool: input.tool,
      to: input.to,
      timer: clock.setTimeout(() => void hostDeny(g, requestId, "PERMISSION_TIMEOUT"), g.deps.timeoutMs),
      settle: (o) => {
        if (waiters.get(requestId) !== w) return;
        waiters.delete(requestId);
        clock.clearTimeout(w.timer);
        resolve(o);
      },
    };
    waiters.set(requestId, w);
  });
  events.publish(input.to, "permission.requested", {
    requestId,
    turnId: input.turnId,
    toolCallId: input.toolCallId,
    tool: input.tool,
    risk: input.risk,
    preview,
    deadline: deadline.toISOString(),
  });
  return outcome;
}

/** What resolve's transaction decided: the answered row and the decision the waiter gets. */
interface Answer {
  row: Row;
  hostCode: "PERMISSION_TIMEOUT" | "PERMISSION_INTERRUPTED" | null;
  decision: PermissionDecision;
  code: ErrorCode | null;
  recorded: boolean;
}

/**
 * resolve's checks and answer, in its transaction (the row locked); see `resolve` for the order.
 * Its refusals come before any write (the transaction rolls back having changed nothing); a host
 * denial past the deadline or without a waiter is an answer that commits, refused after the commit.
 */
async function answerLocked(
  g: GateState,
  tx: Tx,
  principal: string,
  p: PermissionsResolveParams,
  at: Date,
): Promise<Result<Answer>> {
  const row = await lockRequestForAnswer(tx, p.requestId);
  if (!row) return refuse("PERMISSION_NOT_FOUND");
  if (!canAccess(row, principal)) return refuse("FORBIDDEN");
  if (row.status !== "pending") {
    if (row.code === "PERMISSION_TIMEOUT") return refuse("PERMISSION_TIMEOUT");
    // The same answer again by the same person (a retry): the recorded result, as for plans.
    if (row.principal === principal && row.decision === p.decision)
      return ok({ row, hostCode: null, decision: row.decision, code: row.code, recorded: true });
    return refuse("PERMISSION_ALREADY_RESOLVED", undefined, {
      status: row.status,
      decision: row.decision,
      code: row.code,
    });
  }
  // Past its deadline (the timer is about to fire) or without a live waiter: denied, never allowed.
  const live = g.waiters.has(row.id);
  const expired = new Date(row.deadline).getTime() <= at.getTime();
  const hostCode = expired ? "PERMISSION_TIMEOUT" : live ? null : "PERMISSION_INTERRUPTED";
  const decision: PermissionDecision = hostCode ? "deny" : p.decision;
  const status = decision === "deny" ? "denied" : "allowed";
  const code: ErrorCode | null = hostCode ?? (decision === "deny" ? "PERMISSION_DENIED" : null);
  const answered = await answerRequest(
    tx,
    row,
    { status, decision, code, principal: hostCode ? null : principal, at },
    principal,
  );
  await appendAudit(tx, {
    at,
    principal: hostCode ? "host" : principal,
    sessionId: row.session_id,
    turnId: row.turn_id,
    toolCallId: row.tool_call_id,
    action: "permission.resolve",
    decision,
    code,
    details: { requestId: row.id, tool: row.tool, ...(hostCode ? { requested: p.decision } : {}) },
  });
  return ok({ row: answered, hostCode, decision, code, recorded: false });
}

/**
 * `permissions.resolve`: in this order PERMISSION_NOT_FOUND; FORBIDDEN (neither owner nor
 * approver); a request no longer pending PERMISSION_TIMEOUT (it timed out) or
 * PERMISSION_ALREADY_RESOLVED; past its deadline the row is denied and the reply is
 * PERMISSION_TIMEOUT (without a live waiter PERMISSION_ALREADY_RESOLVED): that denial commits and
 * the caller is refused after it. allow-session also records the (session, tool) grant.
 */
async function resolve(
  g: GateState,
  principal: string,
  p: PermissionsResolveParams,
): Promise<Result<PermissionRequestView>> {
  const { db, clock } = g.deps;
  const at = clock.date();
  const answered = await withRefusableTransaction(db, (tx) => answerLocked(g, tx, principal, p, at));
  if (!answered.ok) return answered;
  const outcome = answered.value;
  if (outcome.recorded) return ok(view(outcome.row));
  const w = g.waiters.get(p.requestId);
  if (w) {
    publishResolved(g, w, outcome.decision, outcome.code ?? undefined);
    w.settle(
      outcome.decision === "deny"
        ? {
            kind: "deny",
            code: (outcome.code ?? "PERMISSION_DENIED") as
              | "PERMISSION_DENIED"
              | "PERMISSION_TIMEOUT"
              | "PERMISSION_INTERRUPTED",
          }
        : { kind: "allow", decision: outcome.decision, principal },
    );
  }
  // The host's denial committed (the deadline is absolute); the caller is refused all the same.
  if (outcome.hostCode)
    return refuse(
      outcome.hostCode === "PERMISSION_TIMEOUT" ? "PERMISSION_TIMEOUT" : "PERMISSION_ALREADY_RESOLVED",
    );
  return ok(view(outcome.row));
}

/** `permissions.pending`: live pending requests of sessions the principal owns or approves. */
async function pending(
  g: GateState,
  principal: string,
  p: PermissionsPendingParams,
): Promise<PermissionRequestList> {
  const { db, clock } = g.deps;
  const { rows, limit } = await pendingRequestsFor(db, principal, clock.date(), p);
  // Only what this host waits on is answerable here; the page's position moves past the rest.
  const page = boundPage(rows, {
    limit,
    view: (row) => (g.waiters.has(row.id) ? view(row) : null),
    position: (row) => row.position,
  });
  return { requests: page.items, next: page.next };
}

/** The turn was aborted or lost its lease: its waiting prompts end as denials (PERMISSION_INTERRUPTED). */
function cancelForTurn(g: GateState, turnId: string): void {
  for (const w of [...g.waiters.values()]) {
    if (w.turnId === turnId) void hostDeny(g, w.requestId, "PERMISSION_INTERRUPTED");
  }
}

export function createPermissionGate(deps: PermissionGateDeps) {
  const g: GateState = { deps, waiters: new Map() };
  return {
    /** Creates the request and waits for its outcome (see `request`). */
    request: (input: PromptInput): Promise<GateOutcome> => request(g, input),
    /** `permissions.resolve` (see `resolve`). */
    resolve: (principal: string, p: PermissionsResolveParams): Promise<Result<PermissionRequestView>> =>
      resolve(g, principal, p),
    /** `permissions.pending` (see `pending`). */
    pending: (principal: string, p: PermissionsPendingParams): Promise<PermissionRequestList> =>
      pending(g, principal, p),
    /** The turn's waiting prompts end as denials (see `cancelForTurn`). */
    cancelForTurn: (turnId: string): void => cancelForTurn(g, turnId),
    /** Number of prompts waiting on this host. */
    size: () => g.waiters.size,
  };
}

export type PermissionGate = ReturnType<typeof createPermissionGate>;
