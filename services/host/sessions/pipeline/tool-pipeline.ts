// The tool-call pipeline of `agent.tools.execute` (docs/architecture.md, "Tools"): admission, the
// batch check, the durable facts read per call (mode, permission modes, grants, project settings),
// the pure policy, a person's answer, the run, and the record. The bus only decodes and checks the token.
import {
  batchViolation,
  classifyTool,
  decideTool,
  effectivePermission,
  riskOfTool,
} from "../../../../machines/tool-policy.ts";
import { AppError } from "../../../protocol/app-error.ts";
import type { ErrorCode } from "../../../protocol/error-codes.ts";
import { ok, type Result, refuse, toolResult } from "../../../protocol/result.ts";
import { sanitizeText } from "../../../protocol/text-safety.ts";
import type { ToolExecuteResult, ToolsExecuteParams } from "../../../protocol/schemas.ts";
import type { Clock } from "../../clock.ts";
import { appendAudit } from "../../store/audit-log.ts";
import type { Db } from "../../store/db.ts";
import { findPluginTool, pluginArgProblems } from "../../store/plugin-store.ts";
import type { ProjectStore } from "../../store/project-store.ts";
import type { SessionStore } from "../../store/session-store.ts";
import {
  readToolCallFacts,
  recordToolCall,
  startToolCall,
  type ToolCallFacts,
} from "../../store/tool-call-store.ts";
import { runTool } from "./tool-run.ts";
import type { PluginCaller } from "../../tools/plugin-caller.ts";
import type { ToolAborts } from "../../tools/tool-aborts.ts";
import type { ToolAdmission } from "../../tools/tool-admission.ts";
import type { ToolRunner } from "../../tools/tool-runner.ts";
import type { Audience, EventPublisher } from "../events/event-publisher.ts";
import type { PermissionGate } from "./permission-gate.ts";
import { boundToolResult } from "../../../protocol/byte-bounds.ts";
import type { SessionSupervisor } from "../actors/session-supervisor.ts";
import type { HostMetrics } from "../../metrics.ts";
import type { Lease, TurnDispatcher } from "../turns/turn-dispatcher.ts";

export interface ToolPipelineDeps {
  db: Db;
  clock: Clock;
  sessions: SessionStore;
  supervisor: SessionSupervisor;
  dispatcher: TurnDispatcher;
  events: EventPublisher;
  /** Permission prompts: a `prompt` decision waits here for a person. */
  permissions: PermissionGate;
  /** The built-in tools, built once from config; the call's workspace and settings come per call. */
  runner: Pick<ToolRunner, "run">;
  /** Abort signals of running tool calls by turn (a dead turn aborts its Bash commands). */
  aborts?: ToolAborts;
  /** Calls allowed plugin tools on `<prefix>.plugin.<pluginId>.<tool>` (none: PLUGIN_UNAVAILABLE). */
  plugins?: PluginCaller;
  /** Bounded concurrency (global and per session): full is HOST_OVERLOADED. */
  admission?: ToolAdmission;
  /** Overlapping projects (loaded at start by the project store): their tool calls are refused. */
  projects?: Pick<ProjectStore, "overlapOf">;
  /** A result's bound in encoded bytes (from the server's max_payload; result-bounds.ts). */
  maxResultBytes?: number;
  /** Counts each recorded decision by tool and class (metrics.ts). */
  metrics?: Pick<HostMetrics, "toolDecision" | "sandboxStart" | "sandboxFailure">;
}

/** The result bound when none is given: a quarter of NATS's default max_payload. */
export const DEFAULT_MAX_RESULT_BYTES = 256 * 1024;

/** A refusal as a tool result the model sees (recorded like any other result). */
export function refusal(
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
): ToolExecuteResult {
  return toolResult(code, message, details);
}

/** The text parts of a message's content, joined. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((c): c is { type: "text"; text: string } => c?.type === "text" && typeof c.text === "string")
    .map((c) => c.text)
    .join("");
}

function denialMessage(code: ErrorCode, p: ToolsExecuteParams, mode: string, problems: string[]): string {
  switch (code) {
    case "TOOL_MUST_BE_ALONE":
      return "EnterPlanMode and ExitPlanMode must be the only call of their batch";
    case "PLAN_REQUIRES_INTERACTIVE_SESSION":
      return "a scheduled run cannot enter Plan: nobody is there to approve";
    case "INVALID_PARAMS":
      return `${p.tool}: arguments do not match the plugin's schema: ${problems.join("; ")}`;
    case "PERMISSION_REQUIRED":
      return `${p.tool} needs a person's confirmation, and nobody is asked in an unattended run`;
    default:
      return batchViolation(p.batch)
        ? "EnterPlanMode and ExitPlanMode must be the only call of their batch"
        : `${p.tool} is not allowed in ${mode} mode`;
  }
}

/** The result of a call that started earlier and was never recorded (the host died, or recording failed). */
export function outcomeUnknown(tool: string): ToolExecuteResult {
  return refusal(
    "TOOL_OUTCOME_UNKNOWN",
    `${tool} was started earlier and its result was never recorded; whether it ran is unknown, and it is not run again`,
  );
}

/**
 * What the policy's decision comes to before anything runs: a refusal (overlapping workspace,
 * denial, a person's no, a dead turn, a plugin disabled meanwhile) or no result yet (the call runs),
 * with the decision recorded and the plugin the call goes to.
 */
async function settleDecision(
  pl: PipelineState,
  lease: Lease,
  p: ToolsExecuteParams,
  s: ToolCallFacts,
  to: Audience,
  plugin: PluginTarget | null,
  problems: string[],
  decision: ReturnType<typeof decideTool>,
): Promise<{
  result: ToolExecuteResult | null;
  recordDecision: "allow" | "deny";
  target: PluginTarget | null;
}> {
  const { db, dispatcher, permissions } = pl.deps;
  let result: ToolExecuteResult | null = null;
  let recordDecision: "allow" | "deny" = "allow";
  let target = plugin;
  // A workspace overlapping another project's is served to nobody (docs/architecture.md "Tools").
  const overlaps = pl.deps.projects?.overlapOf(s.workspaceRoot) ?? null;
  if (overlaps) {
    recordDecision = "deny";
    result = refusal(
      "PROJECT_ROOT_OVERLAPS",
      `this project's workspace overlaps project ${overlaps.join(", ")}: no tool runs in it until an operator separates them`,
      { projectIds: overlaps },
    );
  } else if (decision.kind === "deny") {
    recordDecision = "deny";
    const message = denialMessage(decision.code, p, s.mode, problems);
    result = refusal(decision.code, message, decision.code === "INVALID_PARAMS" ? { problems } : undefined);
  } else if (decision.kind === "prompt") {
    // A person decides; no answer by the deadline, or an abort of the turn, is a denial.
    const outcome = await permissions.request({
      sessionId: lease.sessionId,
      turnId: p.turnId,
      toolCallId: p.toolCallId,
      tool: p.tool,
      args: p.args,
      risk: riskOfTool(p.tool, plugin?.tool.risk),
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
    } else if (plugin) {
      // A plugin disabled while the prompt waited receives nothing.
      target = await findPluginTool(db, p.tool);
      if (!target) {
        recordDecision = "deny";
        result = refusal("TOOL_NOT_FOUND", `${p.tool} is no longer an enabled plugin tool`);
      }
    }
  }
  return { result, recordDecision, target };
}

/**
 * Checks the batch and loads the durable facts (refused, nothing written: a batch without this call
 * INVALID_PARAMS, no session SESSION_NOT_FOUND), then decides, runs or refuses, and records the call.
 * `argsProblem`: the path of text Postgres cannot store in the arguments (refused to the model, recorded).
 */
async function executeTool(
  pl: PipelineState,
  lease: Lease,
  p: ToolsExecuteParams,
  argsProblem?: string,
): Promise<Result<ToolExecuteResult>> {
  if (!p.batch.some((c) => c.toolCallId === p.toolCallId && c.tool === p.tool)) {
    return refuse("INVALID_PARAMS", "the batch must contain this call");
  }
  // The durable mode is read now by sessionId, in one read; requestedMode is diagnostic only.
  const call = { sessionId: lease.sessionId, turnId: p.turnId, toolCallId: p.toolCallId, tool: p.tool };
  // A read-only tool in a valid batch is allowed whatever the facts say (tool-policy.ts): its start
  // row is written by the facts statement itself, one round trip fewer before it runs.
  const allowedAnyway =
    classifyTool(p.tool) === "read" && !batchViolation(p.batch) && argsProblem === undefined;
  const s = await readToolCallFacts(pl.deps.db, call, allowedAnyway ? pl.deps.clock.date() : undefined);
  if (!s) return refuse("SESSION_NOT_FOUND");
  // A result recorded under a larger bound (an earlier server's max_payload) is sent bounded.
  if (s.recorded) return ok(boundToolResult(s.recorded, pl.maxResultBytes));
  return ok(await decideAndRun(pl, lease, p, call, s, argsProblem));
}

/** A call not recorded yet: decides, runs or refuses it (as a result the model sees), and records it. */
async function decideAndRun(
  pl: PipelineState,
  lease: Lease,
  p: ToolsExecuteParams,
  call: { sessionId: string; turnId: string; toolCallId: string; tool: string },
  s: ToolCallFacts,
  argsProblem: string | undefined,
): Promise<ToolExecuteResult> {
  const { db, clock } = pl.deps;
  const to: Audience = { sessionId: lease.sessionId, owner: s.owner, approvers: s.approvers };
  // Started before (not in flight here) and never recorded: it may have run. It never runs again.
  if (s.startedBefore) return recordAndAnnounce(pl, lease, p, to, "deny", outcomeUnknown(p.tool));
  if (argsProblem !== undefined)
    return recordAndAnnounce(
      pl,
      lease,
      p,
      to,
      "deny",
      refusal(
        p.tool === "ExitPlanMode" ? "PLAN_INVALID_ARGUMENT" : "INVALID_PARAMS",
        `${p.tool}: ${argsProblem} must not contain a NUL character or an unpaired surrogate`,
        { path: argsProblem, field: argsProblem.split("/")[2] ?? "" },
      ),
    );
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
  const problems = plugin ? pluginArgProblems(plugin.tool, p.args) : [];
  const decision = decideTool({
    mode: s.mode,
    toolClass: classifyTool(p.tool, plugin !== null),
    permission: effectivePermission(s.permissionMode, s.appPermission),
    sessionGrant: s.granted,
    pluginRisk: plugin?.tool.risk ?? null,
    batch: p.batch,
    invalidArgs: problems.length > 0,
    unattended: s.unattended,
  });

  let { result, recordDecision, target } = await settleDecision(
    pl,
    lease,
    p,
    s,
    to,
    plugin,
    problems,
    decision,
  );
  // Allowed (by policy, a grant or a person's answer): its start row commits first (migration 12),
  // so nothing of it runs unrecorded; a start row already there (another attempt) is an unknown outcome.
  if (!result && !s.startWritten && !(await startToolCall(db, call, clock.date()))) {
    recordDecision = "deny";
    result = outcomeUnknown(p.tool);
  }
  if (!result) {
    try {
      result = await runTool(pl.deps, lease, p, s, to, target);
    } catch (err) {
      if (!(err instanceof AppError) || err.code === "INTERNAL") throw err;
      result = refusal(err.code, err.message);
    }
  }
  return recordAndAnnounce(pl, lease, p, to, recordDecision, result, plugin !== null);
}

/**
 * Bounds the result in encoded bytes and repairs it for Postgres (a NUL or lone surrogate in
 * output becomes U+FFFD, counted in details.sanitized), records it with its audit row and
 * transcript entry, and announces it: a retry gets what was recorded.
 */
async function recordAndAnnounce(
  pl: PipelineState,
  lease: Lease,
  p: ToolsExecuteParams,
  to: Audience,
  recordDecision: "allow" | "deny",
  raw: ToolExecuteResult,
  isPlugin = false,
): Promise<ToolExecuteResult> {
  const { db, events } = pl.deps;
  let result = boundToolResult(raw, pl.maxResultBytes);
  const repaired = sanitizeText(result);
  if (repaired.replaced > 0)
    result = { ...repaired.value, details: { ...repaired.value.details, sanitized: repaired.replaced } };
  const recorded = result;
  const body = {
    turnId: p.turnId,
    toolCallId: p.toolCallId,
    tool: p.tool,
    decision: recordDecision,
    isError: result.isError,
    ...(result.code ? { code: result.code } : {}),
    text: textOf(result.content).slice(0, 4000),
  };
  // One statement: the result row, its transcript entry, its audit row and this event (a retry
  // gets what was recorded); published once it committed, in the session's order of events.
  await events.publishWith(to, "tool.result", body, async (at) => ({
    value: undefined,
    event: await recordToolCall(
      db,
      {
        sessionId: lease.sessionId,
        turnId: p.turnId,
        toolCallId: p.toolCallId,
        tool: p.tool,
        principal: `worker:${lease.workerId}`,
        decision: recordDecision,
        ...(recorded.code ? { code: recorded.code } : {}),
        result: recorded,
      },
      body,
      at,
    ),
  }));
  pl.deps.metrics?.toolDecision(p.tool, classifyTool(p.tool, isPlugin), recordDecision);
  return result;
}

/** What the pipeline holds: its deps, the result bound and the calls running here, by turn and call id. */
interface PipelineState {
  deps: ToolPipelineDeps;
  inflight: Map<string, Promise<Result<ToolExecuteResult>>>;
  maxResultBytes: number;
}

/** The enabled plugin tool a call names (store/plugin-store.ts findPluginTool). */
type PluginTarget = NonNullable<Awaited<ReturnType<typeof findPluginTool>>>;

/**
 * One tools.execute call of the lease's worker (the token is checked by the caller): the call's
 * result, or a refusal of the request itself (see `executeTool`).
 */
async function execute(
  pl: PipelineState,
  lease: Lease,
  p: ToolsExecuteParams,
  opts: { argsProblem?: string } = {},
): Promise<Result<ToolExecuteResult>> {
  const { inflight } = pl;
  pl.deps.dispatcher.beat(lease);
  // A retry that arrives while the first call still runs waits for it: the tool runs once.
  const key = `${p.turnId}\u0000${p.toolCallId}`;
  const running = inflight.get(key);
  if (running) return running;
  // Admission (tool-admission.ts): over a bound the call is refused before anything else runs.
  const release = pl.deps.admission?.admit(lease.sessionId);
  const work = executeTool(pl, lease, p, opts.argsProblem);
  inflight.set(key, work);
  try {
    return await work;
  } finally {
    inflight.delete(key);
    release?.();
  }
}

export function createToolPipeline(deps: ToolPipelineDeps) {
  const pl: PipelineState = {
    deps,
    inflight: new Map(),
    maxResultBytes: deps.maxResultBytes ?? DEFAULT_MAX_RESULT_BYTES,
  };
  return {
    /** One tools.execute call of the lease's worker (the token is checked by the caller). */
    execute: (
      lease: Lease,
      p: ToolsExecuteParams,
      opts: { argsProblem?: string } = {},
    ): Promise<Result<ToolExecuteResult>> => execute(pl, lease, p, opts),
  };
}

export type ToolPipeline = ReturnType<typeof createToolPipeline>;
