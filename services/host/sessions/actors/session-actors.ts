// The session machine's I/O steps, one typed function each (docs/architecture.md, "Session actors"): each
// reads or writes the rows in one transaction, publishes the session's events and returns the facts
// the machine moves on. Plan steps (enter, submit, resolve, expire) are in plan-actors.ts.
import type {
  ConfigureParams,
  PromptParams,
  SessionContext,
  SessionFacts,
  StepOutput,
  TurnEndStatus,
} from "../../../../machines/session.machine.ts";
import { AppError } from "../../../protocol/app-error.ts";
import type { ErrorCode } from "../../../protocol/error-codes.ts";
import { ok, type Result, refuse } from "../../../protocol/result.ts";
import type { ProposalView, TurnAssignment } from "../../../protocol/schemas.ts";
import type { Clock } from "../../clock.ts";
import { appendAudit } from "../../store/audit-log.ts";
import { auditApproversAdded } from "../../store/project-members.ts";
import { type Db, withRefusableTransaction, withTransaction } from "../../store/db.ts";
import type { PlanStore } from "../../store/plan-store.ts";
import { pluginToolSpecs } from "../../store/plugin-store.ts";
import {
  readSessionFacts,
  type SessionChanges,
  sessionBusy,
  updateSessionConfig,
} from "../../store/session-facts.ts";
import type { SessionStore } from "../../store/session-store.ts";
import type { Audience, EventPublisher } from "../events/event-publisher.ts";
import { createPlanActors } from "./plan-actors.ts";
import { interruptedPlanChanged } from "../events/plan-events.ts";
import type { ReadProjectInstructions } from "../turns/project-instructions.ts";
import { buildSystemPrompt, buildTools, type PromptContext } from "../turns/prompt-composition.ts";
import type { TurnDispatcher } from "../turns/turn-dispatcher.ts";

export interface SessionActorDeps {
  db: Db;
  clock: Clock;
  sessions: SessionStore;
  plans: PlanStore;
  dispatcher: TurnDispatcher;
  events: EventPublisher;
  leaseMs: number;
  heartbeatMs: number;
  /** The workspace's AGENTS.md, read at each claim (project-instructions.ts); without it, none. */
  instructions?: ReadProjectInstructions;
}

/** The steps' deps with what they cache: owner and approvers per session. */
interface ActorsCtx {
  deps: SessionActorDeps;
  /** Owner and approvers per session, read when its actor loads (and on an approvers change). */
  audiences: Map<string, Audience>;
}

function audienceOf(sa: ActorsCtx, sessionId: string): Audience {
  return sa.audiences.get(sessionId) ?? { sessionId, owner: "", approvers: [] };
}

async function publishSession(sa: ActorsCtx, sessionId: string) {
  const { db, sessions, events } = sa.deps;
  const view = await sessions.view(db, await sessions.getRow(db, sessionId));
  events.publish(audienceOf(sa, sessionId), "session.changed", {
    mode: view.mode,
    permissionMode: view.permissionMode,
    planningState: view.planningState,
    version: view.version,
  });
  return view;
}

/** The project's instructions for a session's next prompt; never fails (none instead). */
async function promptContext(
  sa: ActorsCtx,
  sessionId: string,
  workspaceRoot?: string,
): Promise<PromptContext> {
  const { db, sessions } = sa.deps;
  if (!sa.deps.instructions) return {};
  try {
    const root = workspaceRoot ?? (await sessions.getRow(db, sessionId)).workspace_root;
    return { instructions: await sa.deps.instructions(root, sessionId) };
  } catch {
    return {};
  }
}

/** Drops what was cached for a session whose actor stopped (passivated or degraded). */
function forget(sa: ActorsCtx, sessionId: string): void {
  const { dispatcher } = sa.deps;
  sa.audiences.delete(sessionId);
  dispatcher.noteModel(sessionId, null);
}

/** Where the rows say the session stands; a turn a worker still leases stays leased. */
async function loadSession(sa: ActorsCtx, sessionId: string): Promise<SessionFacts> {
  const { db, sessions, dispatcher } = sa.deps;
  const row = await sessions.getRow(db, sessionId);
  sa.audiences.set(row.id, { sessionId: row.id, owner: row.owner, approvers: row.approvers });
  dispatcher.noteModel(row.id, { provider: row.provider, model: row.model });
  const { turn, pending, queuedExecutionTurnId } = await readSessionFacts(db, sessionId);
  return {
    mode: row.mode,
    activeTurnId: turn?.id ?? null,
    activeTurnKind: turn?.kind ?? null,
    pendingProposalId: pending?.id ?? null,
    pendingDeadlineMs: pending?.deadlineMs ?? null,
    queuedExecutionTurnId,
    leased: turn ? dispatcher.isLeased(turn.id) : false,
  };
}

/** session.prompt: a new prompt turn; AGENT_BUSY (nothing written) while any work is running or pending. */
async function startTurn(sa: ActorsCtx, sessionId: string, p: PromptParams): Promise<Result<StepOutput>> {
  const { db, clock, sessions, events } = sa.deps;
  const started = await withRefusableTransaction(db, async (tx) => {
    await sessions.getRow(tx, sessionId, true);
    if (await sessionBusy(tx, sessionId)) return refuse("AGENT_BUSY");
    const id = await sessions.insertTurn(tx, {
      sessionId,
      kind: "prompt",
      text: p.text,
      ...(p.idempotencyKey ? { idempotencyKey: p.idempotencyKey } : {}),
    });
    await appendAudit(tx, {
      at: clock.date(),
      principal: audienceOf(sa, sessionId).owner,
      sessionId,
      turnId: id,
      action: "session.prompt",
    });
    return ok(id);
  });
  if (!started.ok) return started;
  const turnId = started.value;
  events.publish(audienceOf(sa, sessionId), "turn.started", { turnId, kind: "prompt" });
  return ok({ activeTurnId: turnId, result: { turnId } });
}

/**
 * session.configure: a no-op answers the view; a change is refused (PLAN_CONFIGURATION_BLOCKED,
 * nothing written) while work runs or is pending, or when the session changed concurrently.
 */
async function configure(sa: ActorsCtx, sessionId: string, p: ConfigureParams): Promise<Result<StepOutput>> {
  const { db, clock, sessions, dispatcher, events } = sa.deps;
  const before = await sessions.getRow(db, sessionId);
  const changes: SessionChanges = {};
  if (p.mode !== undefined && p.mode !== before.mode) changes.mode = p.mode;
  if (p.permissionMode !== undefined && p.permissionMode !== before.permission_mode)
    changes.permission_mode = p.permissionMode;
  if (p.model !== undefined && JSON.stringify(p.model) !== JSON.stringify(before.model_config)) {
    changes.provider = p.model.provider;
    changes.model = p.model.model;
    changes.model_config = JSON.stringify(p.model);
  }
  if (p.approvers !== undefined) {
    const approvers = [...new Set(p.approvers)].sort();
    if (JSON.stringify(approvers) !== JSON.stringify([...before.approvers].sort()))
      changes.approvers = approvers;
  }
  if (Object.keys(changes).length === 0) {
    return ok({ mode: before.mode, result: await sessions.view(db, before) });
  }
  // Who is approver now and was not (before.approvers: the members among the stored names).
  const added = (changes.approvers ?? []).filter((a) => !before.approvers.includes(a));
  const updated = await withRefusableTransaction(db, async (tx) => {
    if (await sessionBusy(tx, sessionId)) return refuse("PLAN_CONFIGURATION_BLOCKED");
    if (!(await updateSessionConfig(tx, sessionId, changes, before.version, clock.date())))
      return refuse("PLAN_CONFIGURATION_BLOCKED", "the session changed concurrently; retry");
    await appendAudit(tx, {
      at: clock.date(),
      principal: before.owner,
      sessionId,
      action: "session.configure",
      details: { ...changes, model_config: undefined },
    });
    await auditApproversAdded(tx, {
      at: clock.date(),
      principal: before.owner,
      sessionId,
      approvers: added,
    });
    return ok(undefined);
  });
  if (!updated.ok) return updated;
  if (changes.approvers) {
    sa.audiences.set(sessionId, { sessionId, owner: before.owner, approvers: changes.approvers });
  }
  if (added.length > 0)
    events.publish(audienceOf(sa, sessionId), "approvers.added", { approvers: added, addedBy: before.owner });
  const view = await publishSession(sa, sessionId);
  dispatcher.noteModel(sessionId, view.model);
  if (changes.mode) events.publish(audienceOf(sa, sessionId), "plan.changed", { state: view.planningState });
  return ok({ mode: view.mode, result: view });
}

/** agent.claim: leases the turn to the worker; an execution re-checks its plan file first. */
async function claimTurn(
  sa: ActorsCtx,
  context: SessionContext,
  turnId: string,
  workerId: string,
): Promise<StepOutput> {
  const { db, sessions, plans, dispatcher, events } = sa.deps;
  const { sessionId } = context;
  const kind = context.turnKind === "execution" ? "execution" : "prompt";
  // What the assignment needs is read beside the claim, not after it: the session row, the
  // project's instructions (re-read at every claim, so an edited AGENTS.md applies from the next
  // turn on) and, for a turn in Agent, the enabled plugin tools. Each is marked handled at once, so
  // a claim refused meanwhile leaves no rejection unhandled.
  const rowRead = sessions.getRow(db, sessionId);
  const projectRead = rowRead.then((r) => promptContext(sa, sessionId, r.workspace_root));
  const pluginsRead = kind === "execution" || context.mode === "agent" ? pluginToolSpecs(db) : null;
  for (const read of [rowRead, projectRead, pluginsRead]) void read?.catch(() => {});
  if (kind === "execution") {
    // queued -> running, its audit row and turn.started, plan.changed and turn.claimed: one
    // statement, published in the session's order of events.
    const claimed = await plans.claimExecution(turnId, {
      workerId,
      record: (write) => events.publishRows(audienceOf(sa, sessionId), write),
    });
    if (!claimed.ok) {
      if (claimed.code === "PLAN_ARTIFACT_HASH_MISMATCH") {
        events.publish(audienceOf(sa, sessionId), "turn.ended", {
          turnId,
          status: "aborted",
          code: claimed.code,
        });
        events.publish(
          audienceOf(sa, sessionId),
          "plan.changed",
          interruptedPlanChanged(claimed.proposal, context.mode),
        );
      }
      return { activeTurnId: null, result: new AppError(claimed.code) };
    }
  }
  const [row, project] = await Promise.all([rowRead, projectRead]);
  const plugins = row.mode === "agent" ? await (pluginsRead ?? pluginToolSpecs(db)) : [];
  const lease = dispatcher.grant({ turnId, sessionId, kind }, workerId);
  const assignment: TurnAssignment = {
    sessionId,
    turnId,
    kind,
    token: lease.token,
    mode: row.mode,
    systemPrompt: buildSystemPrompt(row.mode, { turnKind: kind }, project),
    // Agent turns are also offered the enabled plugin tools; Plan turns never see them.
    tools: buildTools(row.mode, { turnKind: kind }, plugins),
    model: row.model_config,
    leaseMs: sa.deps.leaseMs,
    heartbeatMs: sa.deps.heartbeatMs,
    host: dispatcher.hostId,
  };
  // People see that a worker took it (a follower says plainly when none has); an execution's claim
  // wrote its turn.claimed with the claim.
  if (kind !== "execution") events.publish(audienceOf(sa, sessionId), "turn.claimed", { turnId, workerId });
  return { activeTurnId: turnId, result: assignment };
}

/** agent.turn.end (or a lost lease): the turn ends; an execution turn ends its approval's execution. */
async function endTurn(
  sa: ActorsCtx,
  context: SessionContext,
  turnId: string,
  status: TurnEndStatus,
  code: ErrorCode | undefined,
  reason?: string,
): Promise<StepOutput> {
  const { db, clock, sessions, plans, events } = sa.deps;
  const { sessionId } = context;
  const execution = await withTransaction(db, async (tx) => {
    await sessions.endTurn(tx, turnId, status, code ?? null);
    await appendAudit(tx, {
      at: clock.date(),
      sessionId,
      turnId,
      action: "turn.end",
      decision: status,
      code: code ?? null,
      ...(reason ? { details: { reason } } : {}),
    });
    if (context.turnKind !== "execution") return null;
    // A stopped worker or host interrupts the execution; it is never run again.
    const interrupted = code === undefined || code === "WORKER_STOPPED" || code === "HOST_STOPPING";
    return plans.finishExecution(
      tx,
      turnId,
      status === "completed" ? "completed" : "interrupted",
      status === "completed" ? undefined : interrupted ? "PLAN_EXECUTION_INTERRUPTED" : code,
    );
  });
  events.publish(audienceOf(sa, sessionId), "turn.ended", {
    turnId,
    status,
    ...(code ? { code } : {}),
    ...(reason ? { reason } : {}),
  });
  if (execution?.executionId && execution.executionState) {
    events.publish(audienceOf(sa, sessionId), "plan.changed", {
      state: "inactive",
      proposal: execution,
      execution: { executionId: execution.executionId, state: execution.executionState },
    });
  }
  return { result: { turnId, status } };
}

/** session.abort (byClient) or the host: ends the turn, a pending approval or a running execution. */
async function abortWork(sa: ActorsCtx, context: SessionContext, byClient: boolean): Promise<StepOutput> {
  const { db, clock, sessions, plans, events } = sa.deps;
  const { sessionId, turnId } = context;
  const principal = byClient ? "client" : "host";
  let code: ErrorCode = "TURN_ABORTED";
  let proposal: ProposalView | null = null;
  await withTransaction(db, async (tx) => {
    if (context.proposalId) {
      code = "PLAN_APPROVAL_INTERRUPTED";
      proposal = await plans.interruptPending(tx, sessionId, principal);
    } else if (context.turnKind === "execution" && turnId) {
      code = "PLAN_EXECUTION_INTERRUPTED";
      proposal = await plans.finishExecution(tx, turnId, "interrupted", code);
    }
    if (turnId) await sessions.endTurn(tx, turnId, "aborted", code);
    await appendAudit(tx, {
      at: clock.date(),
      principal,
      sessionId,
      turnId,
      action: "session.abort",
      code,
    });
  });
  if (turnId) events.publish(audienceOf(sa, sessionId), "turn.ended", { turnId, status: "aborted", code });
  const p = proposal as ProposalView | null;
  if (p) {
    const row = await sessions.getRow(db, sessionId);
    events.publish(audienceOf(sa, sessionId), "plan.changed", interruptedPlanChanged(p, row.mode));
  }
  return {
    result: { sessionId, aborted: turnId ? { turnId, code, proposalId: p?.proposalId ?? null } : null },
  };
}

export function createSessionActors(deps: SessionActorDeps) {
  const sa: ActorsCtx = { deps, audiences: new Map() };
  const audience = (sessionId: string): Audience => audienceOf(sa, sessionId);
  const planSteps = createPlanActors({
    ...deps,
    audience,
    publishSession: (sessionId) => publishSession(sa, sessionId),
    promptContext: (sessionId) => promptContext(sa, sessionId),
  });

  return {
    ...planSteps,
    audience,
    /** Drops what was cached for a session whose actor stopped (see `forget`). */
    forget: (sessionId: string): void => forget(sa, sessionId),
    /** Where the rows say the session stands (see `loadSession`). */
    loadSession: (sessionId: string): Promise<SessionFacts> => loadSession(sa, sessionId),
    /** session.prompt (see `startTurn`). */
    startTurn: (sessionId: string, p: PromptParams): Promise<Result<StepOutput>> =>
      startTurn(sa, sessionId, p),
    /** session.configure (see `configure`). */
    configure: (sessionId: string, p: ConfigureParams): Promise<Result<StepOutput>> =>
      configure(sa, sessionId, p),
    /** agent.claim (see `claimTurn`). */
    claimTurn: (context: SessionContext, turnId: string, workerId: string): Promise<StepOutput> =>
      claimTurn(sa, context, turnId, workerId),
    /** agent.turn.end or a lost lease (see `endTurn`). */
    endTurn: (
      context: SessionContext,
      turnId: string,
      status: TurnEndStatus,
      code: ErrorCode | undefined,
      reason?: string,
    ): Promise<StepOutput> => endTurn(sa, context, turnId, status, code, reason),
    /** session.abort or the host (see `abortWork`). */
    abortWork: (context: SessionContext, byClient: boolean): Promise<StepOutput> =>
      abortWork(sa, context, byClient),
  };
}

export type SessionActors = ReturnType<typeof createSessionActors>;
