// Rows of sessions, turns, transcript entries and recorded tool calls (projects: project-store.ts). Every write takes
// the host clock's time as a parameter; every authoritative change is one transaction.
import { AppError } from "../../protocol/app-error.ts";
import { type BoundedPage, boundPage } from "./bounded-page.ts";
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type {
  ModelConfig,
  OperatingMode,
  PermissionMode,
  SessionListParams,
  SessionView,
  TurnKind,
} from "../../protocol/schemas.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { jsonBytes, splitWithinBytes } from "../../protocol/byte-bounds.ts";
import type { ContextPage } from "../../protocol/agent-schemas.ts";
import { type Db, type Tx, withRefusableTransaction } from "./db.ts";
import { newId } from "../ids.ts";
import { timePosition, timeWindow } from "./keyset-sql.ts";
import { type PlanningFacts, planningStates, usageOf } from "./session-usage.ts";
import {
  approversAreMembers,
  auditApproversAdded,
  isMember,
  memberApproversSql,
  ownsOrApprovesSql,
} from "./project-members.ts";

export interface SessionRow {
  id: string;
  project_id: string;
  title: string;
  owner: string;
  approvers: string[];
  mode: OperatingMode;
  permission_mode: PermissionMode;
  provider: string;
  model: string;
  model_config: ModelConfig;
  version: number;
  created_at: Date;
  updated_at: Date;
  workspace_root: string;
}

// `approvers` are only those still members of the project (project-members.ts): membership counts
// when it is used, so a removed member is no approver in any row read after the removal.
const sessionSelect = (
  extra = "",
) => `SELECT s.id, s.project_id, s.title, s.owner, ${memberApproversSql("s")} AS approvers, s.mode, s.permission_mode, s.provider, s.model,
  s.model_config, s.version, s.created_at, s.updated_at, p.workspace_root${extra}
  FROM sessions s JOIN projects p ON p.id = s.project_id`;
const SESSION_SELECT = sessionSelect();

/** Owner or approver; rows read by this store list only approvers who are project members. */
export function canAccess(row: Pick<SessionRow, "owner" | "approvers">, principal: string): boolean {
  return row.owner === principal || row.approvers.includes(principal);
}

/** A context page's bound in encoded bytes when none is given (half of NATS's default max_payload). */
export const DEFAULT_PAGE_BYTES = 512 * 1024;
/** Room kept in a page for the reply envelope and `nextCursor`. */
const PAGE_SLACK_BYTES = 1024;
/** Room for `{"piHostPart":{"index":..,"count":..,"json":..}}` around one part. */
const PART_ENVELOPE_BYTES = 128;

/** A session as its rows tell it; the host adds the live actor's `machineState` (bus/client-api.ts). */
export type StoredSessionView = Omit<SessionView, "machineState">;

/** What every session-store operation reads: the pool and the host clock (every write's time). */
interface SessionStoreDeps {
  db: Db;
  clock: Clock;
}

async function planningState(q: Db | Tx, row: SessionRow): Promise<PlanningFacts> {
  return (await planningStates(q, [row])).get(row.id)!;
}

function sessionView(row: SessionRow, p: PlanningFacts): StoredSessionView {
  return {
    id: row.id,
    projectId: row.project_id,
    title: row.title,
    owner: row.owner,
    approvers: row.approvers,
    mode: row.mode,
    permissionMode: row.permission_mode,
    planningState: p.state,
    model: { provider: row.provider, model: row.model },
    version: row.version,
    activeTurnId: p.activeTurnId,
    usage: p.usage,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

async function findRow(q: Db | Tx, sessionId: string, forUpdate = false): Promise<SessionRow | null> {
  const r = await q.query(`${SESSION_SELECT} WHERE s.id = $1${forUpdate ? " FOR UPDATE OF s" : ""}`, [
    sessionId,
  ]);
  return r.rows[0] ?? null;
}

async function getRow(q: Db | Tx, sessionId: string, forUpdate = false): Promise<SessionRow> {
  const row = await findRow(q, sessionId, forUpdate);
  if (!row) throw new AppError("SESSION_NOT_FOUND");
  return row;
}

/** The session, if the principal owns or approves it: refused SESSION_NOT_FOUND, else FORBIDDEN. */
async function accessibleRow(db: Db, principal: string, sessionId: string): Promise<Result<SessionRow>> {
  const row = await findRow(db, sessionId);
  if (!row) return refuse("SESSION_NOT_FOUND");
  return canAccess(row, principal) ? ok(row) : refuse("FORBIDDEN");
}

interface CreateSessionParams {
  projectId: string;
  title?: string;
  mode?: OperatingMode;
  permissionMode?: PermissionMode;
  model?: ModelConfig;
  approvers?: string[];
}

async function createSession(
  { db, clock }: SessionStoreDeps,
  principal: string,
  p: CreateSessionParams,
  hostId: string,
): Promise<Result<StoredSessionView>> {
  const id = newId("ses");
  const at = clock.date();
  const model: ModelConfig = p.model ?? { provider: "scripted", model: "demo" };
  return withRefusableTransaction(db, async (tx) => {
    // Only members create sessions, and only members may be named approver.
    // The share lock waits out a members change in flight; the checks below then see its result.
    const prj = await tx.query("SELECT id FROM projects WHERE id = $1 FOR SHARE", [p.projectId]);
    if (prj.rowCount === 0) return refuse("PROJECT_NOT_FOUND");
    if (!(await isMember(tx, p.projectId, principal)))
      return refuse("FORBIDDEN", "only members of the project may create sessions on it");
    const approvers = await approversAreMembers(tx, p.projectId, p.approvers);
    if (!approvers.ok) return approvers;
    const defaults = await tx.query("SELECT value FROM app_settings WHERE key = 'defaults'");
    const appMode = defaults.rows[0]?.value?.mode;
    const mode: OperatingMode = p.mode ?? (appMode === "plan" ? "plan" : "agent");
    await tx.query(
      `INSERT INTO sessions (id, project_id, title, owner, approvers, mode, permission_mode, provider, model, model_config, version, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $11)`,
      [
        id,
        p.projectId,
        p.title ?? "",
        principal,
        [...new Set(p.approvers ?? [])],
        mode,
        p.permissionMode ?? "inherit",
        model.provider,
        model.model,
        JSON.stringify(model),
        at,
      ],
    );
    await tx.query(
      `INSERT INTO session_leases (session_id, host_id, epoch, acquired_at, incarnation)
           SELECT $1, id, incarnation, $3, incarnation FROM hosts WHERE id = $2`,
      [id, hostId, at],
    );
    await appendAudit(tx, { at, principal, sessionId: id, action: "session.create", details: { mode } });
    await auditApproversAdded(tx, { at, principal, sessionId: id, approvers: p.approvers ?? [] });
    return ok(
      sessionView(await getRow(tx, id), {
        state: mode === "plan" ? "planning" : "inactive",
        activeTurnId: null,
        usage: { ...usageOf(null), lastTurn: null },
      }),
    );
  });
}

/**
 * One page of the sessions `principal` owns or approves (as a member now), newest first: a
 * keyset on (created_at, id), so sessions created meanwhile shift no page. `finish` makes each
 * listed view (the bus adds the live machine state); the byte bound counts what it returns.
 */
async function listSessions<V>(
  db: Db,
  principal: string,
  p: SessionListParams,
  finish: (v: StoredSessionView) => V,
): Promise<BoundedPage<V>> {
  const w = timeWindow(
    { limit: p.limit, cursor: p.before },
    { time: "s.created_at", id: "s.id", direction: "before", first: 2 },
  );
  const r = await db.query<SessionRow & { position_us: string }>(
    `${sessionSelect(`, ${w.select}`)}
          WHERE ${ownsOrApprovesSql("s", "$1")} AND ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
    [principal, ...w.params],
  );
  const facts = await planningStates(db, r.rows.slice(0, w.limit));
  return boundPage(r.rows, {
    limit: w.limit,
    view: (row) => finish(sessionView(row, facts.get(row.id)!)),
    position: timePosition,
  });
}

interface InsertTurnParams {
  sessionId: string;
  kind: TurnKind;
  text: string;
  idempotencyKey?: string;
  proposalId?: string;
}

/** Creates a running turn with its opening user message (the worker's context ends with it). */
async function insertTurn(clock: Clock, tx: Tx, p: InsertTurnParams) {
  const turnId = newId("turn");
  const at = clock.date();
  await tx.query(
    `INSERT INTO turns (id, session_id, kind, status, created_at, idempotency_key, proposal_id) VALUES ($1, $2, $3, 'running', $4, $5, $6)`,
    [turnId, p.sessionId, p.kind, at, p.idempotencyKey ?? null, p.proposalId ?? null],
  );
  await appendTranscript(clock, tx, p.sessionId, turnId, {
    role: "user",
    content: p.text,
    timestamp: at.getTime(),
  });
  return turnId;
}

/**
 * Transcript pages in order: entries with id > cursor. The first page (cursor 0) starts after the
 * session's latest compaction, a new_context call the host itself allowed and recorded
 * (tool_calls, never a worker's appended message): a user message carrying its summary, then
 * everything after its result. Older entries stay in the table as history.
 */
async function transcriptPage(
  db: Db,
  sessionId: string,
  cursor: number,
  limit: number,
  maxBytes = DEFAULT_PAGE_BYTES,
  part?: number,
): Promise<ContextPage> {
  let from = cursor;
  let lead: Record<string, unknown>[] = [];
  if (cursor === 0) {
    const c = await db.query(
      `SELECT e.id, tc.result->'details'->>'summary' AS summary, e.created_at
             FROM tool_calls tc
             JOIN transcript_entries e ON e.session_id = tc.session_id AND e.turn_id = tc.turn_id
              AND e.role = 'toolResult' AND e.message->>'toolCallId' = tc.tool_call_id
            WHERE tc.session_id = $1 AND tc.tool = 'new_context' AND tc.decision = 'allow'
              AND (tc.result->'details'->>'compacted')::boolean IS TRUE
            ORDER BY e.id DESC LIMIT 1`,
      [sessionId],
    );
    const mark = c.rows[0] as { id: string; summary: string | null; created_at: Date } | undefined;
    if (mark) {
      from = Number(mark.id);
      lead = [
        {
          role: "user",
          content: `[The earlier context was compacted by new_context.] Summary of the work so far:\n${mark.summary || "(no summary was given)"}`,
          timestamp: mark.created_at.getTime(),
        },
      ];
    }
  }
  const r = await db.query(
    "SELECT id, message FROM transcript_entries WHERE session_id = $1 AND id > $2 ORDER BY id LIMIT $3",
    [sessionId, from, limit + 1],
  );
  // Bounded in encoded bytes too: the page ends before the entry that would not fit, and an
  // entry bigger than a page alone goes out in parts, one per page (`nextPart` resumes inside
  // it), which the worker joins: nothing is cut (docs/protocol.md "Message bounds").
  const budget = maxBytes - PAGE_SLACK_BYTES;
  const messages: unknown[] = [...lead];
  let bytes = jsonBytes(lead);
  let lastId: number | null = null;
  let cut = r.rows.length > limit;
  for (const row of r.rows.slice(0, limit) as Array<{ id: string; message: unknown }>) {
    const size = jsonBytes(row.message) + 1;
    if (bytes + size <= budget) {
      messages.push(row.message);
      bytes += size;
      lastId = Number(row.id);
      continue;
    }
    if (lastId !== null || lead.length > 0) {
      // After the compaction summary: the next page starts at this entry (cursor past the mark).
      if (lastId === null) return { messages, nextCursor: from };
      cut = true;
      break;
    }
    const parts = splitWithinBytes(JSON.stringify(row.message), budget - PART_ENVELOPE_BYTES);
    const index = Math.min(part ?? 0, parts.length - 1);
    messages.push({ piHostPart: { index, count: parts.length, json: parts[index] } });
    if (index + 1 < parts.length) return { messages, nextCursor: from, nextPart: index + 1 };
    lastId = Number(row.id);
    cut = r.rows.length > 1;
    break;
  }
  return { messages, nextCursor: cut && lastId !== null ? lastId : null };
}

async function endTurn(
  clock: Clock,
  q: Db | Tx,
  turnId: string,
  status: "completed" | "error" | "aborted",
  code?: string | null,
): Promise<boolean> {
  const r = await q.query(
    "UPDATE turns SET status = $2, error_code = $3, ended_at = $4 WHERE id = $1 AND status = 'running'",
    [turnId, status, code ?? null, clock.date()],
  );
  return r.rowCount === 1;
}

async function appendTranscript(
  clock: Clock,
  q: Db | Tx,
  sessionId: string,
  turnId: string | null,
  message: Record<string, unknown>,
): Promise<void> {
  // A worker may resend a tool result the host already recorded: keep the first.
  if (message.role === "toolResult" && typeof message.toolCallId === "string") {
    const dup = await q.query(
      "SELECT 1 FROM transcript_entries WHERE session_id = $1 AND role = 'toolResult' AND message->>'toolCallId' = $2",
      [sessionId, message.toolCallId],
    );
    if (dup.rowCount) return;
  }
  await insertTranscript(clock, q, sessionId, turnId, message);
}

async function insertTranscript(
  clock: Clock,
  q: Db | Tx,
  sessionId: string,
  turnId: string | null,
  message: Record<string, unknown>,
): Promise<void> {
  await q.query(
    "INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at) VALUES ($1, $2, $3, $4, $5)",
    [sessionId, turnId, String(message.role), JSON.stringify(message), clock.date()],
  );
}

export function createSessionStore(deps: SessionStoreDeps) {
  const { db, clock } = deps;
  return {
    getRow,
    accessibleRow: (principal: string, sessionId: string) => accessibleRow(db, principal, sessionId),
    view: async (q: Db | Tx, row: SessionRow): Promise<StoredSessionView> =>
      sessionView(row, await planningState(q, row)),
    createSession: (principal: string, p: CreateSessionParams, hostId: string) =>
      createSession(deps, principal, p, hostId),
    listSessions: <V>(principal: string, p: SessionListParams, finish: (v: StoredSessionView) => V) =>
      listSessions(db, principal, p, finish),
    insertTurn: (tx: Tx, p: InsertTurnParams) => insertTurn(clock, tx, p),
    appendTranscript: (
      q: Db | Tx,
      sessionId: string,
      turnId: string | null,
      message: Record<string, unknown>,
    ) => appendTranscript(clock, q, sessionId, turnId, message),
    transcriptPage: (sessionId: string, cursor: number, limit: number, maxBytes?: number, part?: number) =>
      transcriptPage(db, sessionId, cursor, limit, maxBytes, part),
    endTurn: (q: Db | Tx, turnId: string, status: "completed" | "error" | "aborted", code?: string | null) =>
      endTurn(clock, q, turnId, status, code),
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
