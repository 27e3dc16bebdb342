// Shared by the migration tests: the migration names, a fresh database per test (dropped after
// it), a schema dump, and the legacy (v7) fixture rows with snapshots of them.
import type pg from "pg";
import { afterEach } from "vitest";
import { createTestDatabase, type TestDatabase } from "./test-db.ts";

export const LEGACY = "1700000000001_legacy-v7-layout";
export const PLAN_MODE = "1700000000002_plan-mode-v8";
export const HOSTS = "1700000000003_hosts-and-leases";
export const SCHEDULED = "1700000000004_scheduled-runs";
export const PERMISSIONS = "1700000000005_permission-grants";
export const PLUGINS = "1700000000006_plugins";
export const PROJECT_SETTINGS = "1700000000007_project-settings";
export const COMPACTION = "1700000000008_context-compaction";
export const WRITE_FENCE = "1700000000009_write-fence";
export const PROJECT_MEMBERS = "1700000000010_project-members";
export const SESSION_EVENTS = "1700000000011_session-events";
export const TOOL_CALL_STARTS = "1700000000012_tool-call-starts";
export const HOST_OWNERSHIP = "1700000000013_host-ownership";
export const LEASE_OLD_ROW = "1700000000014_lease-old-row";
export const RUN_HISTORY_DELETE = "1700000000015_run-history-delete";
export const EVENT_CURSOR_BY_TX = "1700000000016_event-cursor-by-transaction";
export const STATEMENT_REFUSAL = "1700000000017_statement-refusal";
export const EVENT_ORDER_IN_SESSION = "1700000000018_event-order-within-session";
export const UNUSED_EVENT_INDEX = "1700000000019_drop-unused-event-index";
export const ALL = [
  LEGACY,
  PLAN_MODE,
  HOSTS,
  SCHEDULED,
  PERMISSIONS,
  PLUGINS,
  PROJECT_SETTINGS,
  COMPACTION,
  WRITE_FENCE,
  PROJECT_MEMBERS,
  SESSION_EVENTS,
  TOOL_CALL_STARTS,
  HOST_OWNERSHIP,
  LEASE_OLD_ROW,
  RUN_HISTORY_DELETE,
  EVENT_CURSOR_BY_TX,
  STATEMENT_REFUSAL,
  EVENT_ORDER_IN_SESSION,
  UNUSED_EVENT_INDEX,
];
/** Every migration after the legacy layout, in order. */
export const AFTER_LEGACY = ALL.slice(1);

// Times are written by the host, never by now(): a fixed clock for every row.
export const T0 = new Date("2024-03-01T10:00:00.000Z");
export const T1 = new Date("2024-03-01T10:05:00.000Z");

/** Fresh databases for the calling file, each dropped after the test that made it. */
export function useFreshDatabases(): (label: string) => Promise<TestDatabase> {
  const open: TestDatabase[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((db) => db.drop()));
  });
  return async (label) => {
    const db = await createTestDatabase(`mig_${label}`);
    open.push(db);
    return db;
  };
}

// ---- schema dump ---------------------------------------------------------------------------------

export async function rows(pool: pg.Pool, sql: string): Promise<string[]> {
  const res = await pool.query<{ r: string }>(sql);
  return res.rows.map((row) => row.r);
}

/** Tables, columns, indexes, constraints and the migration history, as comparable text. */
export async function schemaDump(pool: pg.Pool) {
  return {
    tables: await rows(
      pool,
      `SELECT table_name || ':' || table_type AS r FROM information_schema.tables
        WHERE table_schema = 'public' ORDER BY table_name`,
    ),
    columns: await rows(
      pool,
      `SELECT concat_ws('|', table_name, column_name, data_type, is_nullable, column_default) AS r
         FROM information_schema.columns WHERE table_schema = 'public'
        ORDER BY table_name, ordinal_position`,
    ),
    indexes: await rows(
      pool,
      `SELECT indexname || ' ' || indexdef AS r FROM pg_indexes WHERE schemaname = 'public'
        ORDER BY tablename, indexname`,
    ),
    constraints: await rows(
      pool,
      `SELECT conrelid::regclass::text || ' ' || conname || ' ' || pg_get_constraintdef(oid) AS r
         FROM pg_constraint WHERE connamespace = 'public'::regnamespace
        ORDER BY conrelid::regclass::text, conname`,
    ),
    functions: await rows(
      pool,
      `SELECT p.proname AS r FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'public' ORDER BY 1`,
    ),
    history: await rows(
      pool,
      `SELECT row_to_json(m)::text AS r FROM (SELECT id, name, run_on FROM pgmigrations) m ORDER BY 1`,
    ),
  };
}

export async function appliedNames(pool: pg.Pool): Promise<string[]> {
  const res = await pool.query<{ name: string }>("SELECT name FROM pgmigrations ORDER BY id");
  return res.rows.map((r) => r.name);
}

// ---- legacy fixture ------------------------------------------------------------------------------

export interface LegacySession {
  id: string;
  mode: string | null;
  title: string;
  permissionMode: string;
  modelConfig: string;
  version: number;
}
export interface LegacySetting {
  key: string;
  value: string;
}
export interface LegacyTask {
  id: string;
  config: string;
}
export interface LegacySeed {
  sessions: LegacySession[];
  settings: LegacySetting[];
  tasks: LegacyTask[];
}

export function baseSeed(): LegacySeed {
  return {
    sessions: [
      {
        id: "s_chat",
        mode: "chat",
        title: "Chat session",
        permissionMode: "ask",
        modelConfig: '{"temperature": 0.2}',
        version: 3,
      },
      {
        id: "s_agent",
        mode: "agent",
        title: "Agent session",
        permissionMode: "inherit",
        modelConfig: "{}",
        version: 7,
      },
    ],
    settings: [
      { key: "defaults", value: '{"mode":"chat","permissionMode":"ask"}' },
      { key: "ui", value: '{"theme": "dark", "fontSize": 13}' },
    ],
    tasks: [
      {
        id: "task_chat",
        config: '{"mode":"chat","prompt":"nightly review","model":{"provider":"anthropic"}}',
      },
      { id: "task_agent", config: '{"mode":"agent","prompt":"update deps","maxTurns":4}' },
    ],
  };
}

export async function seedLegacy(pool: pg.Pool, seed: LegacySeed): Promise<void> {
  await pool.query(
    `INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ($1, $2, $3, $4, $5)`,
    ["p1", "Project One", "/srv/work/p1", "alice", T0],
  );
  for (const s of seed.sessions) {
    await pool.query(
      `INSERT INTO sessions (id, project_id, title, owner, mode, permission_mode, provider, model, model_config,
                             version, created_at, updated_at)
       VALUES ($1, 'p1', $2, 'alice', $3, $4, 'anthropic', 'claude-test', $5::jsonb, $6, $7, $8)`,
      [s.id, s.title, s.mode, s.permissionMode, s.modelConfig, s.version, T0, T1],
    );
    const turnId = `t_${s.id}`;
    await pool.query(
      `INSERT INTO turns (id, session_id, kind, status, error_code, created_at, ended_at)
       VALUES ($1, $2, 'prompt', 'completed', NULL, $3, $4)`,
      [turnId, s.id, T0, T1],
    );
    await pool.query(
      `INSERT INTO transcript_entries (session_id, turn_id, role, message, created_at)
       VALUES ($1, $2, 'user', $3::jsonb, $4), ($1, $2, 'assistant', $5::jsonb, $6)`,
      [
        s.id,
        turnId,
        JSON.stringify({ role: "user", content: [{ type: "text", text: `hello from ${s.id}` }] }),
        T0,
        JSON.stringify({ role: "assistant", content: [{ type: "text", text: "done ✓" }] }),
        T1,
      ],
    );
    await pool.query(
      `INSERT INTO audit_log (at, principal, session_id, turn_id, action, decision, details)
       VALUES ($1, 'alice', $2, $3, 'prompt', 'allow', '{"n": 1}')`,
      [T0, s.id, turnId],
    );
  }
  for (const st of seed.settings) {
    await pool.query("INSERT INTO app_settings (key, value) VALUES ($1, $2)", [st.key, st.value]);
  }
  for (const task of seed.tasks) {
    await pool.query(
      `INSERT INTO scheduled_tasks (id, name, cron, timezone, config, enabled, created_at)
       VALUES ($1, $2, '0 3 * * *', 'Europe/Berlin', $3, true, $4)`,
      [task.id, `Task ${task.id}`, task.config, T0],
    );
    await pool.query(
      `INSERT INTO scheduled_runs (id, task_id, status, scheduled_for, started_at, ended_at, error_code)
       VALUES ($1, $2, 'completed', $3, $3, $4, NULL)`,
      [`run_${task.id}`, task.id, T0, T1],
    );
  }
}

/** The legacy columns of every legacy table, so rows can be compared across the schema change. */
export const LEGACY_COLUMNS: Record<string, string[]> = {
  projects: ["id", "name", "workspace_root", "owner", "created_at"],
  sessions: [
    "id",
    "project_id",
    "title",
    "owner",
    "mode",
    "permission_mode",
    "provider",
    "model",
    "model_config",
    "version",
    "created_at",
    "updated_at",
  ],
  turns: ["id", "session_id", "kind", "status", "error_code", "created_at", "ended_at"],
  transcript_entries: ["id", "session_id", "turn_id", "role", "message", "created_at"],
  audit_log: [
    "id",
    "at",
    "principal",
    "session_id",
    "turn_id",
    "tool_call_id",
    "action",
    "decision",
    "code",
    "details",
  ],
  app_settings: ["key", "value"],
  scheduled_tasks: ["id", "name", "cron", "timezone", "config", "enabled", "created_at"],
  scheduled_runs: ["id", "task_id", "status", "scheduled_for", "started_at", "ended_at", "error_code"],
};

/** Every legacy row as JSON text (text columns escaped exactly), optionally without some columns. */
export async function legacySnapshot(pool: pg.Pool, omit: Record<string, string[]> = {}) {
  const out: Record<string, string[]> = {};
  for (const [table, columns] of Object.entries(LEGACY_COLUMNS)) {
    const cols = columns.filter((c) => !(omit[table] ?? []).includes(c));
    out[table] = await rows(
      pool,
      `SELECT row_to_json(x)::text AS r FROM (SELECT ${cols.join(", ")} FROM ${table}) x ORDER BY x.${columns[0]}`,
    );
  }
  return out;
}

export async function sessionModes(pool: pg.Pool): Promise<Record<string, string | null>> {
  const res = await pool.query<{ id: string; mode: string | null }>("SELECT id, mode FROM sessions");
  return Object.fromEntries(res.rows.map((r) => [r.id, r.mode]));
}

/** Raw stored text of settings and task configs (legacy layout: both are text columns). */
export async function legacyTexts(pool: pg.Pool) {
  const settings = await pool.query<{ key: string; value: string }>("SELECT key, value FROM app_settings");
  const tasks = await pool.query<{ id: string; config: string }>("SELECT id, config FROM scheduled_tasks");
  return {
    settings: Object.fromEntries(settings.rows.map((r) => [r.key, r.value])),
    tasks: Object.fromEntries(tasks.rows.map((r) => [r.id, r.config])),
  };
}

export async function columnInfo(pool: pg.Pool, table: string, column: string) {
  const res = await pool.query<{ data_type: string; is_nullable: string; column_default: string | null }>(
    `SELECT data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = $1 AND column_name = $2`,
    [table, column],
  );
  return res.rows[0];
}

export async function checkConstraints(pool: pg.Pool, table: string): Promise<string[]> {
  const res = await pool.query<{ conname: string }>(
    `SELECT conname FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'c' ORDER BY conname`,
    [`public.${table}`],
  );
  return res.rows.map((r) => r.conname);
}

export async function tableExists(pool: pg.Pool, table: string): Promise<boolean> {
  const res = await pool.query<{ ok: boolean }>("SELECT to_regclass($1) IS NOT NULL AS ok", [
    `public.${table}`,
  ]);
  return res.rows[0]?.ok === true;
}
