// What a session's rows say beside the session row itself, for its view: the planning state, the
// running turn and the usage the model reported, read for a whole page of sessions in one query.
import type { OperatingMode, PlanningState, SessionUsage } from "../../protocol/schemas.ts";
import type { Db, Tx } from "./db.ts";
import { planningStateOf } from "./session-facts.ts";

/** A number of the model's usage report, or 0 (the report is the worker's: never trusted to be one). */
const usageNumber = (pathSql: string) =>
  `coalesce(sum(CASE WHEN jsonb_typeof(message #> '${pathSql}') = 'number' THEN (message #>> '${pathSql}')::numeric END), 0)`;
/**
 * The model's token and cost counts summed over assistant messages (pi-ai's `usage` on each), one
 * JSON object; the caller adds `FROM ... WHERE`.
 */
const USAGE_SQL = `SELECT json_build_object(
  'input', ${usageNumber("{usage,input}")}, 'output', ${usageNumber("{usage,output}")},
  'cacheRead', ${usageNumber("{usage,cacheRead}")}, 'cacheWrite', ${usageNumber("{usage,cacheWrite}")},
  'cost', ${usageNumber("{usage,cost,total}")})`;

type UsageCounts = Omit<SessionUsage, "lastTurn">;
export function usageOf(v: unknown): UsageCounts {
  const o = (v ?? {}) as Record<string, unknown>;
  const n = (k: string) => (Number.isFinite(Number(o[k])) ? Number(o[k]) : 0);
  return {
    input: n("input"),
    output: n("output"),
    cacheRead: n("cacheRead"),
    cacheWrite: n("cacheWrite"),
    cost: n("cost"),
  };
}

export interface PlanningFacts {
  state: PlanningState;
  activeTurnId: string | null;
  usage: SessionUsage;
}

/** The planning state, running turn and usage of each of `rows`, in one query for them all. */
export async function planningStates(
  q: Db | Tx,
  rows: ReadonlyArray<{ id: string; mode: OperatingMode }>,
): Promise<Map<string, PlanningFacts>> {
  const r = await q.query(
    `SELECT x.id,
            (SELECT id FROM turns WHERE session_id = x.id AND status = 'running') AS turn,
            EXISTS (SELECT 1 FROM plan_approvals WHERE session_id = x.id AND status = 'pending') AS pending,
            (${USAGE_SQL} FROM transcript_entries WHERE session_id = x.id AND role = 'assistant') AS usage,
            lt.turn_id AS last_turn,
            (${USAGE_SQL} FROM transcript_entries
              WHERE session_id = x.id AND turn_id = lt.turn_id AND role = 'assistant') AS last_usage
       FROM unnest($1::text[]) AS x(id)
       LEFT JOIN LATERAL (SELECT turn_id FROM transcript_entries WHERE session_id = x.id AND role = 'assistant'
                           ORDER BY id DESC LIMIT 1) lt ON true`,
    [rows.map((row) => row.id)],
  );
  const byId = new Map(r.rows.map((x) => [x.id as string, x]));
  const out = new Map<string, PlanningFacts>();
  for (const row of rows) {
    const { turn, pending, usage, last_turn, last_usage } = byId.get(row.id) ?? {};
    out.set(row.id, {
      state: planningStateOf(row.mode, pending === true),
      activeTurnId: turn ?? null,
      usage: {
        ...usageOf(usage),
        lastTurn: last_turn ? { turnId: last_turn, ...usageOf(last_usage) } : null,
      },
    });
  }
  return out;
}
