// The session machine's Plan steps (docs/architecture.md, "Plans"): EnterPlanMode, ExitPlanMode
// (submit), plans.resolve and the approval deadline. Each commits in one transaction, then publishes.
// A refusal is the value the step answers (docs/architecture.md "Refusals"): nothing was committed, and
// session-machine.ts hands it to the machine as the step's failure (the state stays, the reply is it).
import type { StepOutput } from "../../../../machines/session.machine.ts";
import { AppError } from "../../../protocol/app-error.ts";
import { ok, type Result, refuse } from "../../../protocol/result.ts";
import type { PlansResolveParams, ProposalView, ToolExecuteResult } from "../../../protocol/schemas.ts";
import type { Clock } from "../../clock.ts";
import { appendAudit } from "../../store/audit-log.ts";
import { type Db, withRefusableTransaction } from "../../store/db.ts";
import type { PlanStore } from "../../store/plan-store.ts";
import type { StoredSessionView } from "../../store/session-store.ts";
import { enterPlanMode } from "../../store/session-facts.ts";
import type { Audience, EventPublisher } from "../events/event-publisher.ts";
import { buildSystemPrompt, buildTools, type PromptContext } from "../turns/prompt-composition.ts";

export interface PlanActorDeps {
  db: Db;
  clock: Clock;
  plans: PlanStore;
  events: EventPublisher;
  audience: (sessionId: string) => Audience;
  /** Reads the session's view and publishes session.changed. */
  publishSession: (sessionId: string) => Promise<StoredSessionView>;
  /** The project's instructions for the session's next prompt (its AGENTS.md); never fails. */
  promptContext?: (sessionId: string) => Promise<PromptContext>;
}

function publishExpired(deps: PlanActorDeps, sessionId: string, p: ProposalView) {
  const { events, audience } = deps;
  events.publish(audience(sessionId), "turn.ended", {
    turnId: p.turnId,
    status: "aborted",
    code: "PLAN_APPROVAL_TIMEOUT",
  });
  events.publish(audience(sessionId), "plan.changed", {
    state: "planning",
    action: "expired",
    proposal: p,
    status: p.status,
  });
}

/** EnterPlanMode: Agent -> Plan; the worker's run ends and continues with the Plan prompt and tools. */
async function enterPlan(
  deps: PlanActorDeps,
  sessionId: string,
  turnId: string,
  toolCallId: string,
): Promise<Result<StepOutput>> {
  const { db, clock, events, audience, publishSession } = deps;
  const entered = await withRefusableTransaction(db, async (tx) => {
    if (!(await enterPlanMode(tx, sessionId, clock.date()))) return refuse("PLAN_ALREADY_ACTIVE");
    await appendAudit(tx, { at: clock.date(), sessionId, turnId, toolCallId, action: "plan.enter" });
    return ok(null);
  });
  if (!entered.ok) return entered;
  await publishSession(sessionId);
  events.publish(audience(sessionId), "plan.changed", { state: "planning" });
  const result: ToolExecuteResult = {
    content: [
      {
        type: "text",
        text: "Plan mode is on. Inspect the workspace and submit a plan with ExitPlanMode.",
      },
    ],
    isError: false,
    terminate: true,
    // The run continues in Plan: the Plan prompt (same for either turn kind) with the project's
    // instructions read now, and the Plan tools (never plugins).
    next: {
      mode: "plan",
      systemPrompt: buildSystemPrompt(
        "plan",
        { turnKind: "prompt" },
        (await deps.promptContext?.(sessionId)) ?? {},
      ),
      tools: buildTools("plan", { turnKind: "prompt" }, []),
    },
  };
  return ok({ mode: "plan", result });
}

/** ExitPlanMode: writes the plan file and the pending approval; the turn parks until it is resolved. */
async function submitPlan(
  deps: PlanActorDeps,
  sessionId: string,
  turnId: string,
  toolCallId: string,
  args: Record<string, unknown>,
): Promise<Result<StepOutput>> {
  const { plans, events, audience } = deps;
  // The pending row, its audit row and its plan.changed are one statement, published in the
  // session's order of events.
  const submitted = await plans.submit(
    { sessionId, turnId, toolCallId, principal: audience(sessionId).owner, args },
    { record: (write) => events.publishRows(audience(sessionId), write) },
  );
  if (!submitted.ok) return submitted;
  const proposal = submitted.value;
  const result: ToolExecuteResult = {
    content: [
      {
        type: "text",
        text: `Plan submitted as ${proposal.artifactPath}; waiting for a person to approve or reject it.`,
      },
    ],
    isError: false,
    terminate: true,
    details: {
      proposalId: proposal.proposalId,
      artifactPath: proposal.artifactPath,
      sha256: proposal.sha256,
    },
  };
  return ok({
    pendingProposalId: proposal.proposalId,
    pendingDeadlineMs: new Date(proposal.deadline).getTime(),
    result,
  });
}

/** plans.resolve on the pending approval: approve queues the execution turn, reject returns to planning. */
async function resolvePlan(
  deps: PlanActorDeps,
  sessionId: string,
  principal: string,
  params: PlansResolveParams,
): Promise<Result<StepOutput>> {
  const { plans, events, audience } = deps;
  // The decision and its events (turn.ended, plan.changed, and session.changed for an approval,
  // from the committed row) are one statement, published in the session's order of events.
  const resolved = await plans.resolve(principal, params, {
    readOnly: false,
    record: (write) => events.publishRows(audience(sessionId), write),
  });
  if (!resolved.ok) return resolved;
  const outcome = resolved.value;
  const p = outcome.proposal;
  if (outcome.kind === "approved")
    return ok({ activeTurnId: outcome.executionTurnId, activeTurnKind: "execution", result: p });
  if (outcome.kind === "rejected") return ok({ pendingProposalId: null, result: p });
  if (p.status === "expired") {
    // The expiry committed: the machine leaves the approval, and the caller is told it timed out.
    publishExpired(deps, sessionId, p);
    return ok({ pendingProposalId: null, result: new AppError("PLAN_APPROVAL_TIMEOUT") });
  }
  return ok({ pendingProposalId: p.status === "pending" ? p.proposalId : null, result: p });
}

/** plans.resolve while no approval is held by the actor: answered read-only from the rows. */
async function resolveFromRows(
  deps: PlanActorDeps,
  principal: string,
  params: PlansResolveParams,
): Promise<Result<ProposalView>> {
  const resolved = await deps.plans.resolve(principal, params, { readOnly: true });
  return resolved.ok ? ok(resolved.value.proposal) : resolved;
}

/** The approval deadline passed on the host clock: the row expires and the parked turn ends. */
async function expirePlan(deps: PlanActorDeps, sessionId: string): Promise<StepOutput> {
  const p = await deps.plans.expireIfDue(sessionId);
  if (!p) throw new Error("not yet due");
  publishExpired(deps, sessionId, p);
  return {};
}

export function createPlanActors(deps: PlanActorDeps) {
  return {
    /** EnterPlanMode (see `enterPlan`). */
    enterPlan: (sessionId: string, turnId: string, toolCallId: string): Promise<Result<StepOutput>> =>
      enterPlan(deps, sessionId, turnId, toolCallId),
    /** ExitPlanMode (see `submitPlan`). */
    submitPlan: (
      sessionId: string,
      turnId: string,
      toolCallId: string,
      args: Record<string, unknown>,
    ): Promise<Result<StepOutput>> => submitPlan(deps, sessionId, turnId, toolCallId, args),
    /** plans.resolve on the pending approval (see `resolvePlan`). */
    resolvePlan: (
      sessionId: string,
      principal: string,
      params: PlansResolveParams,
    ): Promise<Result<StepOutput>> => resolvePlan(deps, sessionId, principal, params),
    /** plans.resolve answered read-only from the rows (see `resolveFromRows`). */
    resolveFromRows: (principal: string, params: PlansResolveParams): Promise<Result<ProposalView>> =>
      resolveFromRows(deps, principal, params),
    /** The approval deadline passed (see `expirePlan`). */
    expirePlan: (sessionId: string): Promise<StepOutput> => expirePlan(deps, sessionId),
  };
}
