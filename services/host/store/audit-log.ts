// The append-only audit log: one row per decision or state change, written inside the transaction
// of the change it records (or on its own for refusals, which change nothing else).
import type { Db, Tx } from "./db.ts";

export interface AuditEntry {
  at: Date;
  principal?: string | null;
  sessionId?: string | null;
  turnId?: string | null;
  toolCallId?: string | null;
  action: string;
  decision?: string | null;
  code?: string | null;
  details?: Record<string, unknown>;
}

export async function appendAudit(q: Db | Tx, e: AuditEntry): Promise<void> {
  await q.query(
    `INSERT INTO audit_log (at, principal, session_id, turn_id, tool_call_id, action, decision, code, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      e.at,
      e.principal ?? null,
      e.sessionId ?? null,
      e.turnId ?? null,
      e.toolCallId ?? null,
      e.action,
      e.decision ?? null,
      e.code ?? null,
      JSON.stringify(e.details ?? {}),
    ],
  );
}
