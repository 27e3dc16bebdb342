// One XState actor per live session, started from rows, fed every session-changing request, and
// observed: an actor error fails its waiting requests and the actor is restarted from the rows at
// once, with bounded intensity; past the bound the session is degraded (SESSION_DEGRADED) until the
// host restarts. Idle actors are passivated. One session's failure never touches another.
import { type Actor, createActor, fromPromise, waitFor } from "xstate";
import {
  type Reply,
  type SessionEvent,
  type SessionFacts,
  type StepInput,
  type StepOutput,
  sessionMachine,
} from "../../../machines/session.machine.ts";
import { AppError } from "../../protocol/app-error.ts";
import type { ErrorCode } from "../../protocol/error-codes.ts";
import { errorFields, type Logger } from "../../protocol/log.ts";
import type {
  PlansResolveParams,
  ProposalView,
  ToolExecuteResult,
  TurnAssignment,
} from "../../protocol/schemas.ts";
import { appendAudit } from "../store/audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, withTransaction } from "../store/db.ts";
import type { Audience, EventPublisher } from "./event-publisher.ts";
import type { FaultInjector } from "./fault-injector.ts";
import type { PlanStore } from "../store/plan-store.ts";
import { pluginToolSpecs } from "../store/plugin-store.ts";
import type { SessionStore } from "../store/session-store.ts";
import { systemPromptFor, toolsFor } from "./tool-catalog.ts";
import type { TurnDispatcher } from "./turn-dispatcher.ts";

export interface SupervisorDeps {
  /** Test hooks only: injected failures of named steps. */
  faults?: FaultInjector;
  db: Db;
  clock: Clock;
  sessions: SessionStore;
  plans: PlanStore;
  dispatcher: TurnDispatcher;
  events: EventPublisher;
  log: Logger;
  leaseMs: number;
  heartbeatMs: number;
  /** More than this many actor failures of one session within restartWindowMs degrade it (default 3). */
  maxRestarts?: number;
  /** Default 60 s. */
  restartWindowMs?: number;
  /** An idle actor without a request for this long is stopped and dropped (default 60 s). */
  passivateAfterMs?: number;
  /** A turn's token was revoked or parked (abort, lease loss, end): its permission prompts stop waiting. */
  onTurnRevoked?: (turnId: string) => void;
}

/** A session whose actor failed past the restart bound: refused until the host restarts. */
export interface DegradedSession {
  sessionId: string;
  failures: number;
  since: string;
}

interface Entry {
  actor: Actor<typeof sessionMachine>;
  /** Replies of requests sent to (or waiting for) this actor and not yet answered. */
  pending: Set<Reply>;
  /** Resolves once the actor has read its rows (left `loading`). */
  ready: Promise<unknown>;
  /** Host-clock time of the last request or reply: passivation measures idleness from here. */
  lastActive: number;
}

/** The event that makes the provided `injectFault` action throw (test hooks only). */
const FAULT = { type: "FAULT" } as unknown as SessionEvent;

function req<T extends SessionEvent["type"]>(input: StepInput, type: T): Extract<SessionEvent, { type: T }> {
  if (input.request?.type !== type) throw new Error(`expected ${type}`);
  return input.request as Extract<SessionEvent, { type: T }>;
}

export function createSessionSupervisor(deps: SupervisorDeps) {
  const { db, clock, sessions, plans, dispatcher, events, log } = deps;
  /** One I/O step of the machine, as a promise actor; test hooks may make it fail first. */
  const step = (name: string, fn: (input: StepInput) => Promise<StepOutput>) =>
    fromPromise<StepOutput, StepInput>(async ({ input }) => {
      await deps.faults?.enter(name);
      return fn(input);
    });
  const maxRestarts = deps.maxRestarts ?? 3;
  const restartWindowMs = deps.restartWindowMs ?? 60_000;
  const passivateAfterMs = deps.passivateAfterMs ?? 60_000;
  const actors = new Map<string, Entry>();
  const audiences = new Map<string, Audience>();
  /** Host-clock times of recent actor failures per session (within restartWindowMs). */
  const failures = new Map<string, number[]>();
  /** In memory on purpose: a host restart runs the fence, which ends whatever a degraded session held. */
  const degraded = new Map<string, DegradedSession>();
  let stopped = false;

  const audience = (sessionId: string): Audience =>
    audiences.get(sessionId) ?? { sessionId, owner: "", approvers: [] };

  async function publishSession(sessionId: string) {
    const row = await sessions.getRow(db, sessionId);
    const view = await sessions.view(db, row);
    events.publish(audience(sessionId), "session.changed", {
      mode: view.mode,
      permissionMode: view.permissionMode,
      planningState: view.planningState,
      version: view.version,
    });
    return view;
  }

  const machine = sessionMachine.provide({
    actors: {
      loadSession: fromPromise<SessionFacts, { sessionId: string }>(async ({ input }) => {
        const row = await sessions.getRow(db, input.sessionId);
        audiences.set(row.id, { sessionId: row.id, owner: row.owner, approvers: row.approvers });
        const r = await db.query(
          `SELECT (SELECT row_to_json(t) FROM (SELECT id, kind FROM turns WHERE session_id = $1 AND status = 'running') t) AS turn,
                  (SELECT row_to_json(a) FROM (SELECT id, deadline FROM plan_approvals WHERE session_id = $1 AND status = 'pending') a) AS pending,
                  (SELECT execution_turn_id FROM plan_approvals WHERE session_id = $1 AND execution_state = 'queued') AS queued`,
          [input.sessionId],
        );
        const { turn, pending, queued } = r.rows[0];
        return {
          mode: row.mode,
          activeTurnId: turn?.id ?? null,
          activeTurnKind: turn?.kind ?? null,
          pendingProposalId: pending?.id ?? null,
          pendingDeadlineMs: pending ? new Date(pending.deadline).getTime() : null,
          queuedExecutionTurnId: queued ?? null,
          leased: turn ? dispatcher.isLeased(turn.id) : false,
        };
      }),

      startTurn: step("startTurn", async (input) => {
        const { params } = req(input, "PROMPT");
        const p = params as { sessionId: string; text: string; idempotencyKey?: string };
        const turnId = await withTransaction(db, async (tx) => {
          await sessions.getRow(tx, p.sessionId, true);
          const busy = await tx.query(
            `SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = $1 AND status = 'running')
                 OR EXISTS (SELECT 1 FROM plan_approvals WHERE session_id = $1 AND (status = 'pending' OR execution_state IN ('queued', 'running'))) AS busy`,
            [p.sessionId],
          );
          if (busy.rows[0].busy) throw new AppError("AGENT_BUSY");
          const id = await sessions.insertTurn(tx, {
            sessionId: p.sessionId,
            kind: "prompt",
            text: p.text,
            ...(p.idempotencyKey ? { idempotencyKey: p.idempotencyKey } : {}),
          });
          await appendAudit(tx, {
            at: clock.date(),
            principal: audience(p.sessionId).owner,
            sessionId: p.sessionId,
            turnId: id,
            action: "session.prompt",
          });
          return id;
        });
        events.publish(audience(p.sessionId), "turn.started", { turnId, kind: "prompt" });
        return { activeTurnId: turnId, result: { turnId } };
      }),

      configure: step("configure", async (input) => {
        const { params } = req(input, "CONFIGURE");
        const p = params as {
          sessionId: string;
          mode?: string;
          permissionMode?: string;
          model?: { provider: string; model: string };
          approvers?: string[];
        };
        const before = await sessions.getRow(db, p.sessionId);
        const changes: Record<string, unknown> = {};
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
          return { mode: before.mode, result: await sessions.view(db, before) };
        }
        await withTransaction(db, async (tx) => {
          const busy = await tx.query(
            `SELECT EXISTS (SELECT 1 FROM turns WHERE session_id = $1 AND status = 'running')
                 OR EXISTS (SELECT 1 FROM plan_approvals WHERE session_id = $1 AND (status = 'pending' OR execution_state IN ('queued', 'running'))) AS busy`,
            [p.sessionId],
          );
          if (busy.rows[0].busy) throw new AppError("PLAN_CONFIGURATION_BLOCKED");
          const cols = Object.keys(changes);
          const sets = cols.map((c, i) => `${c} = $${i + 3}`).join(", ");
          const u = await tx.query(
            `UPDATE sessions SET ${sets}, version = version + 1, updated_at = $2 WHERE id = $1 AND version = $${cols.length + 3}`,
            [p.sessionId, clock.date(), ...cols.map((c) => changes[c]), before.version],
          );
          if (u.rowCount !== 1)
            throw new AppError("PLAN_CONFIGURATION_BLOCKED", "the session changed concurrently; retry");
          await appendAudit(tx, {
            at: clock.date(),
            principal: before.owner,
            sessionId: p.sessionId,
            action: "session.configure",
            details: { ...changes, model_config: undefined },
          });
        });
        if (changes.approvers) {
          audiences.set(p.sessionId, {
            sessionId: p.sessionId,
            owner: before.owner,
            approvers: changes.approvers as string[],
          });
        }
        const view = await publishSession(p.sessionId);
        if (changes.mode)
          events.publish(audience(p.sessionId), "plan.changed", { state: view.planningState });
        return { mode: view.mode, result: view };
      }),

      claimTurn: step("claimTurn", async (input) => {
        const { turnId, workerId } = req(input, "CLAIM");
        const sessionId = input.context.sessionId;
        const kind = input.context.turnKind === "execution" ? "execution" : "prompt";
        if (kind === "execution") {
          const claimed = await plans.claimExecution(turnId);
          if (!claimed.ok) {
            if (claimed.code === "PLAN_ARTIFACT_HASH_MISMATCH") {
              events.publish(audience(sessionId), "turn.ended", {
                turnId,
                status: "aborted",
                code: claimed.code,
              });
              const proposal = await db.query("SELECT id FROM plan_approvals WHERE execution_turn_id = $1", [
                turnId,
              ]);
              const {
                workspaceRoot: _w,
                owner: _o,
                approvers: _a,
                ...view
              } = await plans.get(proposal.rows[0].id);
              events.publish(audience(sessionId), "plan.changed", {
                state: "inactive",
                action: "interrupted",
                status: view.status,
                proposal: view,
                ...(view.executionId
                  ? { execution: { executionId: view.executionId, state: "interrupted" as const } }
                  : {}),
              });
            }
            return { activeTurnId: null, result: new AppError(claimed.code) };
          }
          const proposal = await db.query(
            "SELECT id, execution_id FROM plan_approvals WHERE execution_turn_id = $1",
            [turnId],
          );
          events.publish(audience(sessionId), "turn.started", { turnId, kind: "execution" });
          events.publish(audience(sessionId), "plan.changed", {
            state: "inactive",
            execution: { executionId: proposal.rows[0].execution_id, state: "running" },
          });
        }
        const row = await sessions.getRow(db, sessionId);
        const lease = dispatcher.grant({ turnId, sessionId, kind }, workerId);
        const assignment: TurnAssignment = {
          sessionId,
          turnId,
          kind,
          token: lease.token,
          mode: row.mode,
          systemPrompt: systemPromptFor(row.mode),
          // Agent turns are also offered the enabled plugin tools; Plan turns never see them.
          tools:
            row.mode === "agent"
              ? [...toolsFor("agent"), ...(await pluginToolSpecs(db))]
              : toolsFor(row.mode),
          model: row.model_config,
          leaseMs: deps.leaseMs,
          heartbeatMs: deps.heartbeatMs,
        };
        return { activeTurnId: turnId, result: assignment };
      }),

      enterPlan: step("enterPlan", async (input) => {
        const { turnId, toolCallId } = req(input, "ENTER_PLAN");
        const sessionId = input.context.sessionId;
        await withTransaction(db, async (tx) => {
          const u = await tx.query(
            "UPDATE sessions SET mode = 'plan', version = version + 1, updated_at = $2 WHERE id = $1 AND mode = 'agent'",
            [sessionId, clock.date()],
          );
          if (u.rowCount !== 1) throw new AppError("PLAN_ALREADY_ACTIVE");
          await appendAudit(tx, { at: clock.date(), sessionId, turnId, toolCallId, action: "plan.enter" });
        });
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
          next: { mode: "plan", systemPrompt: systemPromptFor("plan"), tools: toolsFor("plan") },
        };
        return { mode: "plan" as const, result };
      }),

      submitPlan: step("submitPlan", async (input) => {
        const { turnId, toolCallId, args } = req(input, "SUBMIT_PLAN");
        const sessionId = input.context.sessionId;
        const proposal = await plans.submit({
          sessionId,
          turnId,
          toolCallId,
          principal: audience(sessionId).owner,
          args: args as Record<string, unknown>,
        });
        events.publish(audience(sessionId), "plan.changed", {
          state: "awaiting_approval",
          action: "submitted",
          proposal,
          status: "pending",
        });
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
        return {
          pendingProposalId: proposal.proposalId,
          pendingDeadlineMs: new Date(proposal.deadline).getTime(),
          result,
        };
      }),

      resolvePlan: step("resolvePlan", async (input) => {
        const { params, principal } = req(input, "RESOLVE");
        const sessionId = input.context.sessionId;
        const outcome = await plans.resolve(principal, params as PlansResolveParams, { readOnly: false });
        const p = outcome.proposal;
        if (outcome.kind === "approved") {
          events.publish(audience(sessionId), "turn.ended", { turnId: p.turnId, status: "completed" });
          events.publish(audience(sessionId), "plan.changed", {
            state: "inactive",
            action: "approved",
            proposal: p,
            status: p.status,
            ...(p.targetPermissionMode ? { targetPermissionMode: p.targetPermissionMode } : {}),
            execution: { executionId: p.executionId!, state: "queued" },
          });
          await publishSession(sessionId);
          return { activeTurnId: outcome.executionTurnId, activeTurnKind: "execution" as const, result: p };
        }
        if (outcome.kind === "rejected") {
          events.publish(audience(sessionId), "turn.ended", { turnId: p.turnId, status: "completed" });
          events.publish(audience(sessionId), "plan.changed", {
            state: "planning",
            action: "rejected",
            proposal: p,
            status: p.status,
          });
          return { pendingProposalId: null, result: p };
        }
        if (p.status === "expired") {
          publishExpired(sessionId, p);
          return { pendingProposalId: null, result: new AppError("PLAN_APPROVAL_TIMEOUT") };
        }
        return { pendingProposalId: p.status === "pending" ? p.proposalId : null, result: p };
      }),

      endTurn: step("endTurn", async (input) => {
        const { turnId, status, code } = req(input, "TURN_ENDED");
        const sessionId = input.context.sessionId;
        const execution = await withTransaction(db, async (tx) => {
          await sessions.endTurn(tx, turnId, status, code ?? null);
          await appendAudit(tx, {
            at: clock.date(),
            sessionId,
            turnId,
            action: "turn.end",
            decision: status,
            code: code ?? null,
          });
          if (input.context.turnKind !== "execution") return null;
          return plans.finishExecution(
            tx,
            turnId,
            status === "completed" ? "completed" : "interrupted",
            status === "completed" ? undefined : (code ?? "PLAN_EXECUTION_INTERRUPTED"),
          );
        });
        events.publish(audience(sessionId), "turn.ended", { turnId, status, ...(code ? { code } : {}) });
        if (execution?.executionId && execution.executionState) {
          events.publish(audience(sessionId), "plan.changed", {
            state: "inactive",
            proposal: execution,
            execution: { executionId: execution.executionId, state: execution.executionState },
          });
        }
        return { result: { turnId, status } };
      }),

      abortWork: step("abortWork", async (input) => {
        const { context } = input;
        const sessionId = context.sessionId;
        const principal = input.request?.type === "ABORT" ? "client" : "host";
        const turnId = context.turnId;
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
        if (turnId) events.publish(audience(sessionId), "turn.ended", { turnId, status: "aborted", code });
        const p = proposal as ProposalView | null;
        if (p) {
          const row = await sessions.getRow(db, sessionId);
          events.publish(audience(sessionId), "plan.changed", {
            state: row.mode === "plan" ? "planning" : "inactive",
            action: "interrupted",
            proposal: p,
            status: p.status,
            ...(p.executionId && p.executionState
              ? { execution: { executionId: p.executionId, state: p.executionState } }
              : {}),
          });
        }
        return {
          result: { sessionId, aborted: turnId ? { turnId, code, proposalId: p?.proposalId ?? null } : null },
        };
      }),

      expirePlan: step("expirePlan", async (input) => {
        const p = await plans.expireIfDue(input.context.sessionId);
        if (!p) throw new Error("not yet due");
        publishExpired(input.context.sessionId, p);
        return {};
      }),
    },
    actions: {
      answerResolveFromRows: (_, { event }) => {
        if (event.type !== "RESOLVE") return;
        plans.resolve(event.principal, event.params as PlansResolveParams, { readOnly: true }).then(
          (o) => event.reply.ok(o.proposal),
          (err) => event.reply.error(err),
        );
      },
      offerTurn: ({ context }, { turnId }) => {
        if (turnId)
          dispatcher.offer({
            turnId,
            sessionId: context.sessionId,
            kind: context.turnKind === "execution" ? "execution" : "prompt",
          });
      },
      revokeToken: (_, { turnId, park }) => {
        if (park) dispatcher.park(turnId);
        else dispatcher.revoke(turnId);
        if (turnId) deps.onTurnRevoked?.(turnId);
      },
      // Test hooks only (DESIGN §10): a FAULT event makes the actor fail, as a bug in an action would.
      ...(deps.faults
        ? {
            injectFault: () => {
              throw new Error("injected actor fault");
            },
          }
        : {}),
    },
    delays: {
      approvalDeadline: ({ context }) => Math.max(0, (context.deadlineMs ?? 0) - clock.now()),
    },
  });

  function publishExpired(sessionId: string, p: ProposalView) {
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

  function degradedError(d: DegradedSession): AppError {
    return new AppError(
      "SESSION_DEGRADED",
      `the session's actor failed ${d.failures} times within ${restartWindowMs} ms; it refuses requests until the host restarts`,
      { details: { failures: d.failures, since: d.since } },
    );
  }

  /** The session's live actor, created from the rows when there is none; refuses a degraded session. */
  function entry(sessionId: string): Entry {
    const d = degraded.get(sessionId);
    if (d) throw degradedError(d);
    const existing = actors.get(sessionId);
    if (existing) {
      existing.lastActive = clock.now();
      return existing;
    }
    const actor = createActor(machine, { input: { sessionId }, clock });
    // Requests wait until the actor has read its rows (the loading state answers nothing).
    const ready = waitFor(actor, (snap) => !snap.matches("loading"), { timeout: 30_000 });
    ready.catch(() => {});
    const e: Entry = { actor, pending: new Set(), ready, lastActive: clock.now() };
    actors.set(sessionId, e);
    // Every root actor has an error observer: an unobserved error would be rethrown on a timer and
    // end the process. The observer itself must never throw, for the same reason.
    actor.subscribe({
      error: (err) => {
        try {
          failed(sessionId, e, err);
        } catch (bug) {
          log.error("session.supervisor_bug", { sessionId, ...errorFields(bug) });
        }
      },
    });
    try {
      actor.start();
    } catch (err) {
      failed(sessionId, e, err);
    }
    ready.then(() => reofferOrphan(sessionId, e)).catch(() => {});
    return e;
  }

  /**
   * A loaded actor in `running` whose turn no worker holds or is offered (its actor failed between
   * committing the turn and offering it) offers the turn again, so the turn is not stranded.
   */
  function reofferOrphan(sessionId: string, e: Entry): void {
    if (actors.get(sessionId) !== e) return;
    const snap = e.actor.getSnapshot();
    const { turnId, turnKind } = snap.context;
    if (snap.value !== "running" || !turnId || dispatcher.has(turnId)) return;
    log.warn("session.turn_reoffered", { sessionId, turnId });
    dispatcher.offer({ turnId, sessionId, kind: turnKind === "execution" ? "execution" : "prompt" });
  }

  /**
   * An actor failed: its waiting requests get INTERNAL, and it is restarted from the rows at once,
   * unless it failed more than maxRestarts times within restartWindowMs: then the session is
   * degraded. A failure while loading is not restarted here (the rows could not be read, say the
   * database is down) and does not count: the next request tries again and the caller may retry.
   */
  function failed(sessionId: string, e: Entry, err: unknown): void {
    const snap = e.actor.getSnapshot();
    const state = typeof snap.value === "string" ? snap.value : JSON.stringify(snap.value);
    log.error("session.actor_failed", { sessionId, state, ...errorFields(err) });
    const current = actors.get(sessionId) === e;
    if (current) actors.delete(sessionId);
    for (const r of [...e.pending]) r.fail("INTERNAL", "the session actor failed; retry");
    if (!current || stopped || state === "loading") return;

    const now = clock.now();
    const recent = (failures.get(sessionId) ?? []).filter((t) => now - t < restartWindowMs);
    recent.push(now);
    failures.set(sessionId, recent);
    if (recent.length > maxRestarts) {
      const d: DegradedSession = { sessionId, failures: recent.length, since: clock.date().toISOString() };
      degraded.set(sessionId, d);
      failures.delete(sessionId);
      audiences.delete(sessionId);
      // The worker of its turn (if any) stops, its waiting permission prompts end as denials
      // (PERMISSION_INTERRUPTED) and a running tool is aborted; the turn's rows stay until the next
      // start's fence.
      dispatcher.revoke(snap.context.turnId);
      if (snap.context.turnId) deps.onTurnRevoked?.(snap.context.turnId);
      log.error("session.degraded", { ...d, maxRestarts, restartWindowMs });
      return;
    }
    log.warn("session.actor_restarting", { sessionId, failures: recent.length, maxRestarts });
    // After the failed actor's stack unwinds; a request arriving first simply creates it.
    queueMicrotask(() => {
      if (stopped || actors.has(sessionId) || degraded.has(sessionId)) return;
      try {
        const r = entry(sessionId);
        r.ready.then(
          () => log.info("session.actor_restarted", { sessionId }),
          () => {},
        );
      } catch (bug) {
        log.error("session.supervisor_bug", { sessionId, ...errorFields(bug) });
      }
    });
  }

  /** Sends to the actor; a synchronous throw is treated as the actor failing, never passed on. */
  function deliver(sessionId: string, e: Entry, event: SessionEvent): void {
    if (actors.get(sessionId) !== e) {
      // The actor failed (or was replaced) after this request attached to it.
      for (const r of [...e.pending]) r.fail("INTERNAL", "the session actor failed; retry");
      return;
    }
    try {
      e.actor.send(event);
    } catch (err) {
      try {
        e.actor.stop();
      } catch {}
      failed(sessionId, e, err);
    }
  }

  /** Stops idle actors without a request for passivateAfterMs; rows stay the truth. */
  function passivateIdle(): number {
    const now = clock.now();
    let n = 0;
    for (const [sessionId, e] of actors) {
      if (e.pending.size > 0 || now - e.lastActive < passivateAfterMs) continue;
      const snap = e.actor.getSnapshot();
      // Only `idle`: never with a running, parked or queued turn, nor mid-step.
      if (snap.status !== "active" || snap.value !== "idle") continue;
      actors.delete(sessionId);
      audiences.delete(sessionId);
      e.actor.stop();
      n++;
    }
    for (const [sessionId, times] of failures) {
      if (times.every((t) => now - t >= restartWindowMs)) failures.delete(sessionId);
    }
    return n;
  }
  const sweeper = setInterval(
    () => {
      try {
        const n = passivateIdle();
        if (n > 0) log.info("session.passivated", { count: n, active: actors.size });
      } catch (bug) {
        log.error("session.supervisor_bug", errorFields(bug));
      }
    },
    Math.min(Math.max(Math.floor(passivateAfterMs / 4), 10), 15_000),
  );
  sweeper.unref();

  return {
    /** Sends a request event to the session's actor and waits for its reply; SESSION_DEGRADED if degraded. */
    request<T = unknown>(sessionId: string, build: (reply: Reply) => SessionEvent): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        const e = entry(sessionId);
        let done = false;
        const settle = () => {
          done = true;
          e.pending.delete(reply);
          e.lastActive = clock.now();
        };
        const reply: Reply = {
          ok(result) {
            if (done) return;
            settle();
            if (result instanceof AppError) reject(result);
            else resolve(result as T);
          },
          fail(code, message) {
            reply.error(new AppError(code as ErrorCode, message));
          },
          error(err) {
            if (done) return;
            settle();
            reject(err);
          },
        };
        e.pending.add(reply);
        e.ready.then(
          () => deliver(sessionId, e, build(reply)),
          (err) => reply.error(err),
        );
      });
    },
    /** Fire-and-forget event (lease loss); dropped, and logged, for a degraded session. */
    send(sessionId: string, event: SessionEvent): void {
      let e: Entry;
      try {
        e = entry(sessionId);
      } catch (err) {
        log.warn("session.event_dropped", { sessionId, type: event.type, ...errorFields(err) });
        return;
      }
      e.ready.then(
        () => deliver(sessionId, e, event),
        () => {},
      );
    },
    /** Loads the session's actor from the rows if it is not live (activation); resolves when ready. */
    async activate(sessionId: string): Promise<void> {
      await entry(sessionId).ready;
    },
    /** Test hooks only: makes the session's actor fail (the provided injectFault throws). */
    async fault(sessionId: string): Promise<{ sessionId: string; failures: number; degraded: boolean }> {
      const e = entry(sessionId);
      await e.ready;
      deliver(sessionId, e, FAULT);
      const d = degraded.get(sessionId);
      return { sessionId, failures: d?.failures ?? failures.get(sessionId)?.length ?? 0, degraded: !!d };
    },
    /** Live actors and degraded sessions (for `host.status`). */
    status(): { active: number; degraded: DegradedSession[] } {
      return { active: actors.size, degraded: [...degraded.values()] };
    },
    /** Runs one passivation sweep now (the sweeper runs it every passivateAfterMs / 4); returns the count. */
    passivateIdle,
    stopAll(): void {
      stopped = true;
      clearInterval(sweeper);
      for (const { actor } of actors.values()) actor.stop();
      actors.clear();
    },
    size: () => actors.size,
  };
}

export type SessionSupervisor = ReturnType<typeof createSessionSupervisor>;
