// The rows of one tool call (docs/architecture.md "Tools"), each step one statement: the facts read
// per call (a recorded result, the durable mode and permission mode, the app default, the project's
// tool settings, unattended, an allow-session grant, a start row), the start row an allowed call
// commits before anything of it runs (migration 12), and its record: result, transcript entry,
// audit row and its `tool.result` event together.
import type { OperatingMode, PermissionMode, ToolExecuteResult } from "../../protocol/schemas.ts";
import { type Db, prepared } from "./db.ts";
import {
  type AppendedEvent,
  appendedEvent,
  appendedEventColumns,
  appendEventCtes,
  appendEventParams,
} from "./event-store.ts";
import { memberApproversSql } from "./project-members.ts";

export interface ToolCallFacts {
  mode: OperatingMode;
  permissionMode: PermissionMode;
  appPermission: string | null;
  owner: string;
  approvers: string[];
  workspaceRoot: string;
  networkAllowed: boolean;
  previewOrigins: string[];
  /** The result recorded for this (turn, toolCallId): a retry gets it again, nothing runs twice. */
  recorded: ToolExecuteResult | null;
  /**
   * Whether an earlier attempt started this call (its start row exists): without a recorded result
   * its outcome is unknown, and it must not run again.
   */
  startedBefore: boolean;
  unattended: boolean;
  granted: boolean;
  /** This read also committed the call's start row (readToolCallFacts with `startAt`). */
  startWritten: boolean;
}

export interface ToolCallRef {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
}

/** The facts' columns (`FROM sessions s JOIN projects p`) for the call `$2, $3` of tool `$4`. */
const FACT_COLUMNS = `s.mode, s.permission_mode, s.owner, ${memberApproversSql("s")} AS approvers, p.workspace_root, p.network_allowed, p.preview_origins,
            EXISTS (SELECT 1 FROM tool_call_starts WHERE turn_id = $2 AND tool_call_id = $3) AS started_before,
            (SELECT value->>'permissionMode' FROM app_settings WHERE key = 'defaults') AS app_permission,
            (SELECT result FROM tool_calls WHERE turn_id = $2 AND tool_call_id = $3) AS recorded,
            EXISTS (SELECT 1 FROM scheduled_runs WHERE session_id = s.id) AS unattended,
            EXISTS (SELECT 1 FROM permission_grants WHERE session_id = s.id AND tool = $4) AS granted`;

/**
 * The facts of one tool call in one read (no write, so a call that is refused commits only its
 * record). Null when the session does not exist.
 */
const FACTS = prepared(
  "tool-call-facts",
  `SELECT ${FACT_COLUMNS}, false AS start_written
     FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = $1`,
);

/**
 * The facts and the start row in one statement, for a call the policy allows whatever the facts
 * say (a read-only tool in a valid batch): the row is written unless the session is gone, the call
 * has a recorded result or a start row already. `started_before` is as of before this statement
 * (its snapshot), `start_written` says this statement wrote the row; it commits with the statement.
 */
const FACTS_AND_START = prepared(
  "tool-call-facts-start",
  `WITH start AS (
       INSERT INTO tool_call_starts (turn_id, tool_call_id, session_id, tool, started_at)
       SELECT $2, $3, $1, $4, $5
        WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)
          AND NOT EXISTS (SELECT 1 FROM tool_calls WHERE turn_id = $2 AND tool_call_id = $3)
       ON CONFLICT (turn_id, tool_call_id) DO NOTHING RETURNING 1
     )
     SELECT ${FACT_COLUMNS}, EXISTS (SELECT 1 FROM start) AS start_written
       FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = $1`,
);

/**
 * The call's facts in one statement; with `startAt` (a call the policy allows whatever the facts
 * say) the same statement commits its start row too (`startWritten`), saving the start's own round
 * trip. Null when the session does not exist.
 */
export async function readToolCallFacts(
  db: Db,
  call: ToolCallRef,
  startAt?: Date,
): Promise<ToolCallFacts | null> {
  const params = [call.sessionId, call.turnId, call.toolCallId, call.tool];
  const r = await db.query(startAt ? FACTS_AND_START([...params, startAt]) : FACTS(params));
  const s = r.rows[0];
  if (!s) return null;
  return {
    mode: s.mode,
    permissionMode: s.permission_mode,
    appPermission: s.app_permission ?? null,
    owner: s.owner,
    approvers: s.approvers,
    workspaceRoot: s.workspace_root,
    networkAllowed: s.network_allowed === true,
    previewOrigins: s.preview_origins ?? [],
    recorded: s.recorded ?? null,
    startedBefore: s.started_before === true,
    unattended: s.unattended === true,
    granted: s.granted === true,
    startWritten: s.start_written === true,
  };
}

/**
 * Commits the call's start row: nothing of an allowed call runs before it (a host that dies while it
 * runs leaves the row, and the call's outcome is then unknown, never run again). False when the row
 * was there already (another attempt started it).
 */
const START = prepared(
  "tool-call-start",
  `INSERT INTO tool_call_starts (turn_id, tool_call_id, session_id, tool, started_at)
   VALUES ($2, $3, $1, $4, $5) ON CONFLICT (turn_id, tool_call_id) DO NOTHING`,
);

export async function startToolCall(db: Db, call: ToolCallRef, at: Date): Promise<boolean> {
  const r = await db.query(START([call.sessionId, call.turnId, call.toolCallId, call.tool, at]));
  return (r.rowCount ?? 0) === 1;
}

const RECORD = prepared(
  "tool-call-record",
  `WITH call AS (
       INSERT INTO tool_calls (turn_id, tool_call_id, session_id, tool, decision, code, result, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING 1
     ), entry AS (
       INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at)
       SELECT $3, $1, 'toolResult', $9, $8 FROM call RETURNING 1
     ), audit AS (
       INSERT INTO audit_log (at, principal, session_id, turn_id, tool_call_id, action, decision, code, details)
       SELECT $8, $10, $3, $1, $2, 'tool.decision', $5, $6, $11 FROM call RETURNING 1
     ), ${appendEventCtes(12)}
     SELECT ${appendedEventColumns("$3")}, (SELECT count(*) FROM entry) + (SELECT count(*) FROM audit) AS written`,
);

export interface ToolCallRecord extends ToolCallRef {
  principal: string;
  decision: "allow" | "deny";
  code?: string;
  result: ToolExecuteResult;
}

/**
 * The call's record in one statement: its `tool_calls` row (whose primary key makes this the first
 * record of the call, or the whole statement fails), its transcript entry, its audit row and its
 * `tool.result` event (`event`: the event's body), at `at`. Returns the event as appended.
 */
export async function recordToolCall(
  db: Db,
  p: ToolCallRecord,
  event: Record<string, unknown>,
  at: Date,
): Promise<AppendedEvent> {
  const message = {
    role: "toolResult",
    toolCallId: p.toolCallId,
    toolName: p.tool,
    content: p.result.content,
    details: p.result.details ?? {},
    isError: p.result.isError,
    timestamp: at.getTime(),
  };
  const r = await db.query(
    RECORD([
      p.turnId,
      p.toolCallId,
      p.sessionId,
      p.tool,
      p.decision,
      p.code ?? null,
      JSON.stringify(p.result),
      at,
      JSON.stringify(message),
      p.principal,
      JSON.stringify({ tool: p.tool }),
      ...appendEventParams(p.sessionId, "tool.result", event, at),
    ]),
  );
  return appendedEvent(r.rows[0]);
}
