// Agent-worker methods (`<prefix>.agent.<method>`, docs/protocol.md): claim, context, append,
// heartbeat, turn.end and tools.execute. Every call but claim carries the turn's capability token,
// checked before anything else. tools.execute loads sessions.mode from Postgres on every call; a
// `prompt` decision waits for a person through the permission gate (never in unattended runs).
import {
  batchViolation,
  classifyTool,
  decideTool,
  effectivePermission,
} from "../../../machines/tool-policy.ts";
import { AppError } from "../../protocol/app-error.ts";
import type { ErrorCode } from "../../protocol/error-codes.ts";
import {
  AppendParams,
  ClaimParams,
  ContextParams,
  decodeParams,
  HeartbeatParams,
  type ToolExecuteResult,
  ToolsExecuteParams,
  TurnEndParams,
  type ToolsExecuteParams as ToolsExecuteParamsType,
} from "../../protocol/schemas.ts";
import type { AgentMethod } from "../../protocol/subjects.ts";
import { appendAudit } from "../store/audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, withTransaction } from "../store/db.ts";
import type { Audience, EventPublisher } from "../sessions/event-publisher.ts";
import { type PermissionGate, riskOf } from "../sessions/permission-gate.ts";
import { findPluginTool, pluginArgProblems } from "../store/plugin-store.ts";
import type { PluginCaller } from "../tools/plugin-caller.ts";
import type { SessionSupervisor } from "../sessions/session-supervisor.ts";
import type { SessionStore } from "../store/session-store.ts";
import type { ToolAborts } from "../tools/tool-aborts.ts";
import type { ToolAdmission } from "../tools/tool-admission.ts";
import { createToolRunner } from "../tools/tool-runner.ts";
import type { Lease, TurnDispatcher } from "../sessions/turn-dispatcher.ts";

export type AgentHandler = (params: unknown) => Promise<unknown>;

function refusal(code: ErrorCode, message: string, details?: Record<string, unknown>): ToolExecuteResult {
  return {
    content: [{ type: "text", text: `${code}: ${message}` }],
    isError: true,
    code,
    ...(details ? { details } : {}),
  };
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((c): c is { type: "text"; text: string } => c?.type === "text" && typeof c.text === "string")
    .map((c) => c.text)
    .join("");
}

export function createAgentApi(deps: {
  /** Abort signals of running tool calls by turn (a dead turn aborts its Bash commands). */
  aborts?: ToolAborts;
  /** Calls allowed plugin tools on `<prefix>.plugin.<pluginId>.<tool>` (none: PLUGIN_UNAVAILABLE). */
  plugins?: PluginCaller;
  db: Db;
  clock: Clock;
  sessions: SessionStore;
  supervisor: SessionSupervisor;
  dispatcher: TurnDispatcher;
  events: EventPublisher;
  /** Permission prompts (DESIGN §7): a `prompt` decision waits here for a person. */
  permissions: PermissionGate;
  /** Bounded concurrency of tools.execute (global and per session): full is HOST_OVERLOADED. */
  admission?: ToolAdmission;
}): Record<AgentMethod, AgentHandler> {
  const { db, clock, sessions, supervisor, dispatcher, events, permissions } = deps;
  const inflight = new Map<string, Promise<ToolExecuteResult>>();

  /** The token check that precedes everything else: a missing, revoked or foreign token is refused. */
  function authorize(params: unknown): Lease {
    const p = (typeof params === "object" && params !== null ? params : {}) as Record<string, unknown>;
    const lease = dispatcher.check(p.turnId, p.token);
    if (!lease || ("sessionId" in p && p.sessionId !== lease.sessionId))
      throw new AppError("TURN_TOKEN_INVALID");
    return lease;
  }

  async function audienceOf(sessionId: string): Promise<Audience> {
    const row = await sessions.getRow(db, sessionId);
    return { sessionId, owner: row.owner, approvers: row.approvers };
  }

  return {
    claim: async (params) => {
      const p = decodeParams(ClaimParams, params);
      const offer = dispatcher.take(p.turnId);
      if (!offer) {
        // An execution that was already claimed, ended or fenced says so with its own code.
        const exec = await db.query(
          "SELECT execution_state FROM plan_approvals WHERE execution_turn_id = $1",
          [p.turnId],
        );
        if (exec.rows[0] && exec.rows[0].execution_state !== "queued")
          throw new AppError("PLAN_EXECUTION_STALE");
        throw new AppError("TURN_NOT_CLAIMABLE");
      }
      try {
        return await supervisor.request(offer.sessionId, (reply) => ({
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
    },

    context: async (params) => {
      const lease = authorize(params);
      const p = decodeParams(ContextParams, params);
      return sessions.transcriptPage(lease.sessionId, p.cursor ?? 0, p.limit ?? 200);
    },

    append: async (params) => {
      const lease = authorize(params);
      const p = decodeParams(AppendParams, params);
      const to = await audienceOf(lease.sessionId);
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
    },

    heartbeat: async (params) => {
      const lease = authorize(params);
      decodeParams(HeartbeatParams, params);
      dispatcher.beat(lease);
      return { ok: true, leaseMs: undefined };
    },

    "turn.end": async (params) => {
      const lease = authorize(params);
      const p = decodeParams(TurnEndParams, params);
      return supervisor.request(lease.sessionId, (reply) => ({
        type: "TURN_ENDED",
        turnId: lease.turnId,
        status: p.status,
        ...(p.status === "error" ? { code: "TOOL_FAILED" } : {}),
        reply,
      }));
    },

    "tools.execute": async (params) => {
      const lease = authorize(params);
      const p = decodeParams(ToolsExecuteParams, params);
      dispatcher.beat(lease);
      // A retry that arrives while the first call still runs waits for it: the tool runs once.
      const key = `${p.turnId}\u0000${p.toolCallId}`;
      const running = inflight.get(key);
      if (running) return running;
      // Admission (tool-admission.ts): over a bound the call is refused before anything else runs.
      const release = deps.admission?.admit(lease.sessionId);
      const work = executeTool(lease, p);
      inflight.set(key, work);
      try {
        return await work;
      } finally {
        inflight.delete(key);
        release?.();
      }
    },
  };

  /** Checks the batch, loads the durable mode, decides, runs or refuses, and records the call. */
  async function executeTool(lease: Lease, p: ToolsExecuteParamsType): Promise<ToolExecuteResult> {
    if (!p.batch.some((c) => c.toolCallId === p.toolCallId && c.tool === p.tool)) {
      throw new AppError("INVALID_PARAMS", "the batch must contain this call");
    }
    // One round trip: a recorded result for this call (a retry), the durable mode, read now by
    // sessionId, whether an allow-session grant covers this tool, and the project's tool settings
    // (network, preview origins: a change applies to the next call). requestedMode is diagnostic only.
    const r = await db.query(
      `SELECT s.mode, s.permission_mode, s.owner, s.approvers, p.workspace_root, p.network_allowed, p.preview_origins,
              (SELECT value->>'permissionMode' FROM app_settings WHERE key = 'defaults') AS app_permission,
              (SELECT result FROM tool_calls WHERE turn_id = $2 AND tool_call_id = $3) AS recorded,
              EXISTS (SELECT 1 FROM scheduled_runs WHERE session_id = s.id) AS unattended,
              EXISTS (SELECT 1 FROM permission_grants WHERE session_id = s.id AND tool = $4) AS granted
       FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = $1`,
      [lease.sessionId, p.turnId, p.toolCallId, p.tool],
    );
    const s = r.rows[0];
    if (!s) throw new AppError("SESSION_NOT_FOUND");
    if (s.recorded) return s.recorded as ToolExecuteResult;
    const to: Audience = { sessionId: lease.sessionId, owner: s.owner, approvers: s.approvers };
    if (p.requestedMode !== undefined && p.requestedMode !== s.mode) {
      await appendAudit(db, {
        at: clock.date(),
        principal: `worker:${lease.workerId}`,
        sessionId: lease.sessionId,
        turnId: p.turnId,
        toolCallId: p.toolCallId,
        action: "tool.mode_conflict",
        details: { requestedMode: p.requestedMode, durableMode: s.mode, tool: p.tool },
      });
    }
    // A name that is no built-in may be an enabled plugin tool, read now: enable/disable apply at once.
    const plugin = classifyTool(p.tool) === "unknown" ? await findPluginTool(db, p.tool) : null;
    const decision = decideTool({
      mode: s.mode,
      toolClass: classifyTool(p.tool, plugin !== null),
      permission: effectivePermission(s.permission_mode, s.app_permission),
      sessionGrant: s.granted === true,
      pluginRisk: plugin?.tool.risk ?? null,
      batch: p.batch,
    });

    let result: ToolExecuteResult | null = null;
    let recordDecision: "allow" | "deny" = "allow";
    // A plugin call's arguments against the tool's schema (only when the policy did not deny it).
    const problems = plugin && decision.kind !== "deny" ? pluginArgProblems(plugin.tool, p.args) : [];
    if (decision.kind === "allow" && p.tool === "EnterPlanMode" && s.unattended) {
      // An unattended (scheduled) run never waits for a person, so it cannot enter Plan.
      recordDecision = "deny";
      result = refusal(
        "PLAN_REQUIRES_INTERACTIVE_SESSION",
        "a scheduled run cannot enter Plan: nobody is there to approve",
      );
    } else if (decision.kind === "deny") {
      recordDecision = "deny";
      result = refusal(
        decision.code,
        batchViolation(p.batch)
          ? "EnterPlanMode and ExitPlanMode must be the only call of their batch"
          : `${p.tool} is not allowed in ${s.mode} mode`,
      );
    } else if (problems.length > 0) {
      // Arguments that do not fit the manifest's schema reach neither a person nor the plugin.
      recordDecision = "deny";
      result = refusal(
        "INVALID_PARAMS",
        `${p.tool}: arguments do not match the plugin's schema: ${problems.join("; ")}`,
        {
          problems,
        },
      );
    } else if (decision.kind === "prompt" && s.unattended) {
      // Unattended (scheduled) runs never wait for a person: a prompt there is a denial.
      recordDecision = "deny";
      result = refusal(
        "PERMISSION_REQUIRED",
        `${p.tool} needs a person's confirmation, and nobody is asked in an unattended run`,
      );
    } else if (decision.kind === "prompt") {
      // A person decides; no answer by the deadline, or an abort of the turn, is a denial.
      const outcome = await permissions.request({
        sessionId: lease.sessionId,
        turnId: p.turnId,
        toolCallId: p.toolCallId,
        tool: p.tool,
        args: p.args,
        risk: riskOf(p.tool, plugin?.tool.risk),
        to,
        worker: `worker:${lease.workerId}`,
      });
      if (outcome.kind === "deny") {
        recordDecision = "deny";
        result = refusal(
          outcome.code,
          outcome.code === "PERMISSION_DENIED"
            ? `a person denied ${p.tool}`
            : outcome.code === "PERMISSION_TIMEOUT"
              ? `nobody answered the permission prompt for ${p.tool} in time`
              : `the permission prompt for ${p.tool} ended with its turn`,
        );
      } else if (!dispatcher.check(lease.turnId, lease.token)) {
        // Allowed, but the turn ended meanwhile: nothing runs for a dead turn.
        recordDecision = "deny";
        result = refusal("PERMISSION_INTERRUPTED", `the turn ended before ${p.tool} could run`);
      }
    }
    // Allowed (by policy, a grant or a person's answer): run it.
    if (!result) {
      try {
        if (p.tool === "EnterPlanMode") {
          result = await supervisor.request<ToolExecuteResult>(lease.sessionId, (reply) => ({
            type: "ENTER_PLAN",
            turnId: p.turnId,
            toolCallId: p.toolCallId,
            reply,
          }));
        } else if (p.tool === "ExitPlanMode") {
          result = await supervisor.request<ToolExecuteResult>(lease.sessionId, (reply) => ({
            type: "SUBMIT_PLAN",
            turnId: p.turnId,
            toolCallId: p.toolCallId,
            args: p.args,
            reply,
          }));
        } else if (plugin) {
          // Only now, after the policy (and a person) allowed it, does the plugin receive the call;
          // a plugin disabled while the prompt waited receives nothing.
          const still = decision.kind === "prompt" ? await findPluginTool(db, p.tool) : plugin;
          if (!still) {
            recordDecision = "deny";
            result = refusal("TOOL_NOT_FOUND", `${p.tool} is no longer an enabled plugin tool`);
          } else {
            result = deps.plugins
              ? await deps.plugins.call(still.pluginId, p.tool, {
                  sessionId: lease.sessionId,
                  turnId: p.turnId,
                  toolCallId: p.toolCallId,
                  args: p.args,
                })
              : refusal("PLUGIN_UNAVAILABLE", "this host has no plugin connection");
          }
        } else {
          let seq = 0;
          const abort = deps.aborts?.open(p.turnId);
          result = await createToolRunner({
            workspaceRoot: s.workspace_root,
            network: s.network_allowed === true,
            previewOrigins: s.preview_origins ?? [],
          })
            .run(p.tool, p.args, {
              sessionId: lease.sessionId,
              ...(abort ? { signal: abort.signal } : {}),
              // Streamed output goes to this session's audience only, in order.
              onOutput: (stream, text) =>
                events.publish(to, "tool.output", {
                  turnId: p.turnId,
                  toolCallId: p.toolCallId,
                  tool: p.tool,
                  stream,
                  seq: seq++,
                  text,
                }),
            })
            .finally(() => abort?.release());
        }
      } catch (err) {
        if (!(err instanceof AppError) || err.code === "INTERNAL") throw err;
        result = refusal(err.code, err.message);
      }
    }
    await withTransaction(db, (tx) =>
      sessions.recordToolCall(tx, {
        sessionId: lease.sessionId,
        turnId: p.turnId,
        toolCallId: p.toolCallId,
        tool: p.tool,
        principal: `worker:${lease.workerId}`,
        decision: recordDecision,
        ...(result.code ? { code: result.code } : {}),
        result,
      }),
    );
    events.publish(to, "tool.result", {
      turnId: p.turnId,
      toolCallId: p.toolCallId,
      tool: p.tool,
      decision: recordDecision,
      isError: result.isError,
      ...(result.code ? { code: result.code } : {}),
      text: textOf(result.content).slice(0, 4000),
    });
    return result;
  }
}
