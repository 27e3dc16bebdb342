// What the tool-call pipeline reads per call, in one round trip: a recorded result (a retry), the
// durable mode and permission mode, the app default, the project's tool settings, whether the run is
// unattended and whether an allow-session grant covers the tool. Read per call, as the contract says.
import type { OperatingMode, PermissionMode, ToolExecuteResult } from "../../protocol/schemas.ts";
import type { Db } from "./db.ts";
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
   * Whether this read wrote the call's start row (migration 12): false means an earlier attempt
   * started it, so without a recorded result its outcome is unknown and it must not run again.
   */
  started: boolean;
  unattended: boolean;
  granted: boolean;
}

/**
 * The facts of one tool call, and its start row written in the same statement (no extra round
 * trip): nothing of the call runs before that row is committed. Null when the session does not exist.
 */
export async function readToolCallFacts(
  db: Db,
  call: { sessionId: string; turnId: string; toolCallId: string; tool: string },
  at: Date,
): Promise<ToolCallFacts | null> {
  const r = await db.query(
    `WITH started AS (
       INSERT INTO tool_call_starts (turn_id, tool_call_id, session_id, tool, started_at)
       SELECT $2, $3, $1, $4, $5 WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $1)
       ON CONFLICT (turn_id, tool_call_id) DO NOTHING RETURNING 1
     )
     SELECT s.mode, s.permission_mode, s.owner, ${memberApproversSql("s")} AS approvers, p.workspace_root, p.network_allowed, p.preview_origins,
            EXISTS (SELECT 1 FROM started) AS started,
            (SELECT value->>'permissionMode' FROM app_settings WHERE key = 'defaults') AS app_permission,
            (SELECT result FROM tool_calls WHERE turn_id = $2 AND tool_call_id = $3) AS recorded,
            EXISTS (SELECT 1 FROM scheduled_runs WHERE session_id = s.id) AS unattended,
            EXISTS (SELECT 1 FROM permission_grants WHERE session_id = s.id AND tool = $4) AS granted
     FROM sessions s JOIN projects p ON p.id = s.project_id WHERE s.id = $1`,
    [call.sessionId, call.turnId, call.toolCallId, call.tool, at],
  );
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
    started: s.started === true,
    unattended: s.unattended === true,
    granted: s.granted === true,
  };
}
