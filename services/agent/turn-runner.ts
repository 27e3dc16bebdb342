// Runs one claimed turn: fetches the context, keeps the lease alive, drives the pi Agent, appends
// the transcript and ends the turn. Everything goes through the host's agent methods over NATS.
import type { AgentMessage } from "@mariozechner/pi-agent-core";
import type { Subscription } from "@nats-io/nats-core";
import { isAppError } from "../protocol/app-error.ts";
import { errorFields } from "../runtime/log.ts";
import type { TurnAssignment } from "../protocol/schemas.ts";
import { turnCancelSubject } from "../protocol/subjects.ts";
import { createPartJoiner } from "./bounded-call.ts";
import { resolveModel } from "./model-resolver.ts";
import {
  abortTurn,
  describe,
  isTransportError,
  loseOwner,
  newTurnContext,
  ownerGone,
  type TurnContext,
  type TurnOutcome,
  type TurnRunnerDeps,
} from "./turn-context.ts";
import { drive } from "./turn-drive.ts";

export type { TurnRunnerDeps } from "./turn-context.ts";

export const CONTEXT_PAGE_LIMIT = 200;
const MAX_ERROR_TEXT = 4000;

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

/** Starts running `assignment` at once; the returned handle aborts it and reports when it is over. */
export function startTurn(assignment: TurnAssignment, deps: TurnRunnerDeps): RunningTurn {
  const t = newTurnContext(assignment, deps);
  const abort = (reason: string, code?: "WORKER_STOPPED") => abortTurn(t, reason, code);
  const done = runTurn(t).catch((err) => {
    deps.log.error("turn.crashed", { ...t.fields, ...errorFields(err) });
  });
  return { turnId: assignment.turnId, abort, done };
}

async function runTurn(t: TurnContext): Promise<void> {
  const { assignment, deps } = t;
  deps.log.info("turn.started", { ...t.fields, mode: assignment.mode, model: assignment.model.model });
  const cancelSub: Subscription = deps.nc.subscribe(
    turnCancelSubject(deps.prefix, deps.workerId, assignment.turnId),
    { callback: () => abortTurn(t, "cancelled by the host") },
  );
  const stopHeartbeats = startHeartbeats(t);
  let outcome: TurnOutcome;
  try {
    outcome = await execute(t);
  } catch (err) {
    outcome = { status: "error", error: describe(err) };
  } finally {
    stopHeartbeats();
    cancelSub.unsubscribe();
  }
  if (t.abortReason !== undefined && outcome.status === "completed") {
    outcome = { status: "error", error: `aborted: ${t.abortReason}` };
  }
  if (t.abortCode && outcome.status === "error") outcome = { ...outcome, code: t.abortCode };
  await endTurn(t, outcome);
}

function startHeartbeats(t: TurnContext): () => void {
  const { assignment, deps, fields } = t;
  const { turnId, token } = assignment;
  const every = Math.max(50, assignment.heartbeatMs || 3_000);
  const leaseMs = Math.max(every, assignment.leaseMs || every * 5);
  let lastOk = Date.now();
  let inFlight = false;
  const timer = setInterval(async () => {
    if (inFlight || t.stop.signal.aborted) return;
    inFlight = true;
    try {
      await deps.client.call("heartbeat", { turnId, token });
      lastOk = Date.now();
    } catch (err) {
      if (ownerGone(err) && !isTransportError(err)) {
        loseOwner(t, err);
      } else if (!isTransportError(err)) {
        abortTurn(t, `heartbeat refused (${describe(err)})`);
      } else if (Date.now() - lastOk > leaseMs) {
        // Unanswered for a whole lease: the host is gone or cut off, and another may own the turn.
        loseOwner(t, err);
      } else {
        deps.log.warn("turn.heartbeat_unanswered", { ...fields, ...errorFields(err) });
      }
    } finally {
      inFlight = false;
    }
  }, every);
  return () => clearInterval(timer);
}

async function fetchContext(t: TurnContext): Promise<AgentMessage[]> {
  const { turnId, token } = t.assignment;
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
    const page = await t.deps.client.call("context", params);
    // The host stores what workers appended: pi-ai messages (docs/protocol.md, `context`); an
    // entry too big for a page comes in parts, joined here.
    messages.push(...(joiner.add(page.messages) as AgentMessage[]));
    if (page.nextCursor === null || page.nextCursor === undefined || t.stop.signal.aborted) {
      if (joiner.partial()) throw new Error("the context ended inside an entry sent in parts");
      return messages;
    }
    if (page.nextCursor === cursor && page.nextPart === part)
      throw new Error(`context cursor did not advance (${cursor})`);
    cursor = page.nextCursor;
    part = page.nextPart;
  }
}

async function execute(t: TurnContext): Promise<TurnOutcome> {
  const { assignment, deps } = t;
  const context = await fetchContext(t);
  if (t.stop.signal.aborted) return { status: "error", error: `aborted: ${t.abortReason}` };

  const resolved = resolveModel(
    assignment.model,
    { sessionId: assignment.sessionId, turnId: assignment.turnId, scriptedCallLog: deps.scriptedCallLog },
    deps.models,
  );
  if (!resolved.ok) {
    deps.log.warn("turn.model_unavailable", { ...t.fields, error: resolved.error });
    return { status: "error", error: resolved.error, code: resolved.code };
  }
  try {
    return await drive(t, context, resolved.model, resolved.getApiKey);
  } finally {
    resolved.dispose();
  }
}

async function endTurn(t: TurnContext, outcome: TurnOutcome): Promise<void> {
  const { deps, fields } = t;
  const { turnId, token } = t.assignment;
  if (t.ownerLost) {
    // The new owner ended it (its takeover aborted the turn and announced that).
    deps.log.info("turn.ended", { ...fields, status: "aborted", ownerLost: true });
    return;
  }
  // Redacted whole, then cut: a cut first could leave half a key that no longer matches.
  const error = outcome.status === "error" ? deps.redact(outcome.error).slice(0, MAX_ERROR_TEXT) : undefined;
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
