// Schema history against real Postgres (DESIGN §8): empty database up, up twice is a no-op, the
// legacy chat -> plan mapping, and a malformed legacy value rolling back to the legacy schema and data.
import type pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { migrateUp } from "../services/host/store/migrate.ts";
import { createTestDatabase, type TestDatabase } from "./support/test-db.ts";

const LEGACY = "1700000000001_legacy-v7-layout";
const PLAN_MODE = "1700000000002_plan-mode-v8";
const HOSTS = "1700000000003_hosts-and-leases";
const SCHEDULED = "1700000000004_scheduled-runs";
const PERMISSIONS = "1700000000005_permission-grants";
const PLUGINS = "1700000000006_plugins";
const PROJECT_SETTINGS = "1700000000007_project-settings";
const COMPACTION = "1700000000008_context-compaction";
const WRITE_FENCE = "1700000000009_write-fence";
const ALL = [
  LEGACY,
  PLAN_MODE,
  HOSTS,
  SCHEDULED,
  PERMISSIONS,
  PLUGINS,
  PROJECT_SETTINGS,
  COMPACTION,
  WRITE_FENCE,
];
/** Every migration after the legacy layout, in order. */
const AFTER_LEGACY = ALL.slice(1);

// Times are written by the host, never by now(): a fixed clock for every row.
const T0 = new Date("2024-03-01T10:00:00.000Z");
const T1 = new Date("2024-03-01T10:05:00.000Z");

const open: TestDatabase[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((db) => db.drop()));
});

async function freshDb(label: string): Promise<TestDatabase> {
  const db = await createTestDatabase(`mig_${label}`);
  open.push(db);
  return db;
}

// ---- schema dump ---------------------------------------------------------------------------------

async function rows(pool: pg.Pool, sql: string): Promise<string[]> {
  const res = await pool.query<{ r: string }>(sql);
  return res.rows.map((row) => row.r);
}

/** Tables, columns, indexes, constraints and the migration history, as comparable text. */
async function schemaDump(pool: pg.Pool) {
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

async function appliedNames(pool: pg.Pool): Promise<string[]> {
  const res = await pool.query<{ name: string }>("SELECT name FROM pgmigrations ORDER BY id");
  return res.rows.map((r) => r.name);
}

// ---- legacy fixture ------------------------------------------------------------------------------

interface LegacySession {
  id: string;
  mode: string | null;
  title: string;
  permissionMode: string;
  modelConfig: string;
  version: number;
}
interface LegacySetting {
  key: string;
  value: string;
}
interface LegacyTask {
  id: string;
  config: string;
}
interface LegacySeed {
  sessions: LegacySession[];
  settings: LegacySetting[];
  tasks: LegacyTask[];
}

function baseSeed(): LegacySeed {
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

async function seedLegacy(pool: pg.Pool, seed: LegacySeed): Promise<void> {
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
const LEGACY_COLUMNS: Record<string, string[]> = {
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
async function legacySnapshot(pool: pg.Pool, omit: Record<string, string[]> = {}) {
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

async function sessionModes(pool: pg.Pool): Promise<Record<string, string | null>> {
  const res = await pool.query<{ id: string; mode: string | null }>("SELECT id, mode FROM sessions");
  return Object.fromEntries(res.rows.map((r) => [r.id, r.mode]));
}

/** Raw stored text of settings and task configs (legacy layout: both are text columns). */
async function legacyTexts(pool: pg.Pool) {
  const settings = await pool.query<{ key: string; value: string }>("SELECT key, value FROM app_settings");
  const tasks = await pool.query<{ id: string; config: string }>("SELECT id, config FROM scheduled_tasks");
  return {
    settings: Object.fromEntries(settings.rows.map((r) => [r.key, r.value])),
    tasks: Object.fromEntries(tasks.rows.map((r) => [r.id, r.config])),
  };
}

async function columnInfo(pool: pg.Pool, table: string, column: string) {
  const res = await pool.query<{ data_type: string; is_nullable: string; column_default: string | null }>(
    `SELECT data_type, is_nullable, column_default FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = $1 AND column_name = $2`,
    [table, column],
  );
  return res.rows[0];
}

async function checkConstraints(pool: pg.Pool, table: string): Promise<string[]> {
  const res = await pool.query<{ conname: string }>(
    `SELECT conname FROM pg_constraint WHERE conrelid = to_regclass($1) AND contype = 'c' ORDER BY conname`,
    [`public.${table}`],
  );
  return res.rows.map((r) => r.conname);
}

async function tableExists(pool: pg.Pool, table: string): Promise<boolean> {
  const res = await pool.query<{ ok: boolean }>("SELECT to_regclass($1) IS NOT NULL AS ok", [
    `public.${table}`,
  ]);
  return res.rows[0]?.ok === true;
}

// ---- (a) empty database ----------------------------------------------------------------------------

describe("migrations from an empty database", () => {
  it("applies every migration in order, and a second run applies and changes nothing", async () => {
    const db = await freshDb("empty");
    expect(await migrateUp({ databaseUrl: db.url })).toEqual(ALL);
    expect(await appliedNames(db.pool)).toEqual(ALL);

    const before = await schemaDump(db.pool);
    for (const table of [
      "sessions",
      "plan_approvals",
      "hosts",
      "session_leases",
      "permission_requests",
      "tool_calls",
    ]) {
      expect(before.tables).toContain(`${table}:BASE TABLE`);
    }
    expect(before.indexes.some((i) => i.startsWith("plan_approvals_one_pending_per_session "))).toBe(true);

    expect(await migrateUp({ databaseUrl: db.url })).toEqual([]);
    expect(await schemaDump(db.pool)).toEqual(before);
  });

  it("stepping one migration at a time reaches the same schema as one run", async () => {
    const [oneRun, stepped] = await Promise.all([freshDb("onerun"), freshDb("stepped")]);
    await migrateUp({ databaseUrl: oneRun.url });
    for (const name of ALL) {
      expect(await migrateUp({ databaseUrl: stepped.url, count: 1 })).toEqual([name]);
    }
    const a = await schemaDump(oneRun.pool);
    const b = await schemaDump(stepped.pool);
    expect({ ...b, history: [] }).toEqual({ ...a, history: [] });
    expect(await appliedNames(stepped.pool)).toEqual(ALL);
  });
});

// ---- (b) legacy rows map ---------------------------------------------------------------------------

describe("legacy chat/agent rows", () => {
  it("maps chat to plan everywhere, keeps agent and every other field and row", async () => {
    const db = await freshDb("legacy_map");
    expect(await migrateUp({ databaseUrl: db.url, count: 1 })).toEqual([LEGACY]);
    await seedLegacy(db.pool, baseSeed());
    const omit = { sessions: ["mode"], app_settings: ["value"], scheduled_tasks: ["config"] };
    const before = await legacySnapshot(db.pool, omit);

    expect(await migrateUp({ databaseUrl: db.url })).toEqual(AFTER_LEGACY);

    expect(await sessionModes(db.pool)).toEqual({ s_chat: "plan", s_agent: "agent" });

    const settings = await db.pool.query<{ key: string; value: unknown }>(
      "SELECT key, value FROM app_settings",
    );
    expect(Object.fromEntries(settings.rows.map((r) => [r.key, r.value]))).toEqual({
      defaults: { mode: "plan", permissionMode: "ask" },
      ui: { theme: "dark", fontSize: 13 },
    });

    const tasks = await db.pool.query<{ id: string; config: unknown }>(
      "SELECT id, config FROM scheduled_tasks",
    );
    expect(Object.fromEntries(tasks.rows.map((r) => [r.id, r.config]))).toEqual({
      task_chat: { mode: "plan", prompt: "nightly review", model: { provider: "anthropic" } },
      task_agent: { mode: "agent", prompt: "update deps", maxTurns: 4 },
    });

    // Everything else, turns and transcripts included, is untouched.
    const after = await legacySnapshot(db.pool, omit);
    expect(after).toEqual(before);
    expect(after.transcript_entries).toHaveLength(4);
    expect(after.turns).toHaveLength(2);

    // The new schema is in force: chat can no longer be stored.
    await expect(
      db.pool.query("UPDATE sessions SET mode = 'chat' WHERE id = 's_agent'"),
    ).rejects.toMatchObject({
      code: "23514",
    });
    const approvers = await db.pool.query<{ approvers: string[] }>(
      "SELECT approvers FROM sessions WHERE id = 's_chat'",
    );
    expect(approvers.rows[0]?.approvers).toEqual([]);
  });
});

// ---- (c) malformed legacy values -------------------------------------------------------------------

interface MalformedCase {
  name: string;
  mutate(seed: LegacySeed): void;
  /** SQL that makes the bad row valid again. */
  fix: string;
}

function badSession(mode: string | null): LegacySession {
  return { id: "s_bad", mode, title: "Bad", permissionMode: "inherit", modelConfig: "{}", version: 0 };
}

function setSetting(seed: LegacySeed, key: string, value: string): void {
  seed.settings = seed.settings.filter((s) => s.key !== key).concat({ key, value });
}

const MALFORMED: MalformedCase[] = [
  {
    name: "session mode NULL",
    mutate: (seed) => seed.sessions.push(badSession(null)),
    fix: "UPDATE sessions SET mode = 'agent' WHERE id = 's_bad'",
  },
  {
    name: "session mode 'Chat'",
    mutate: (seed) => seed.sessions.push(badSession("Chat")),
    fix: "UPDATE sessions SET mode = 'chat' WHERE id = 's_bad'",
  },
  {
    name: "session mode ' chat'",
    mutate: (seed) => seed.sessions.push(badSession(" chat")),
    fix: "UPDATE sessions SET mode = 'chat' WHERE id = 's_bad'",
  },
  {
    name: "session mode 'plan' (not a legacy value)",
    mutate: (seed) => seed.sessions.push(badSession("plan")),
    fix: "UPDATE sessions SET mode = 'agent' WHERE id = 's_bad'",
  },
  {
    name: "app default value that is not JSON",
    mutate: (seed) => setSetting(seed, "defaults", '{"mode":"chat","permissionMode":"ask"'),
    fix: `UPDATE app_settings SET value = '{"mode":"chat","permissionMode":"ask"}' WHERE key = 'defaults'`,
  },
  {
    name: "another settings value that is not JSON",
    mutate: (seed) => setSetting(seed, "ui", "theme=dark"),
    fix: `UPDATE app_settings SET value = '{"theme":"dark"}' WHERE key = 'ui'`,
  },
  {
    name: "app default mode 'Chat'",
    mutate: (seed) => setSetting(seed, "defaults", '{"mode":"Chat","permissionMode":"ask"}'),
    fix: `UPDATE app_settings SET value = '{"mode":"chat","permissionMode":"ask"}' WHERE key = 'defaults'`,
  },
  {
    name: "scheduled task config that is not JSON",
    mutate: (seed) => seed.tasks.push({ id: "task_bad", config: "mode: chat" }),
    fix: `UPDATE scheduled_tasks SET config = '{"mode":"agent"}' WHERE id = 'task_bad'`,
  },
  {
    name: "scheduled task config without a mode",
    mutate: (seed) => seed.tasks.push({ id: "task_bad", config: '{"prompt":"weekly"}' }),
    fix: `UPDATE scheduled_tasks SET config = '{"prompt":"weekly","mode":"chat"}' WHERE id = 'task_bad'`,
  },
  {
    name: "scheduled task mode 'chat ' with trailing space",
    mutate: (seed) => seed.tasks.push({ id: "task_bad", config: '{"mode":"chat "}' }),
    fix: `UPDATE scheduled_tasks SET config = '{"mode":"chat"}' WHERE id = 'task_bad'`,
  },
];

describe("a malformed legacy value", () => {
  it.each(MALFORMED)(
    "$name: rolls back, leaves the legacy schema and data, then migrates once fixed",
    async (c) => {
      const db = await freshDb("malformed");
      expect(await migrateUp({ databaseUrl: db.url, count: 1 })).toEqual([LEGACY]);
      const seed = baseSeed();
      c.mutate(seed);
      await seedLegacy(db.pool, seed);

      const schemaBefore = await schemaDump(db.pool);
      const rowsBefore = await legacySnapshot(db.pool);

      await expect(migrateUp({ databaseUrl: db.url })).rejects.toThrow(/pi-host migration v8/);

      // The legacy schema is still in force.
      expect(await appliedNames(db.pool)).toEqual([LEGACY]);
      expect(await columnInfo(db.pool, "sessions", "mode")).toEqual({
        data_type: "text",
        is_nullable: "YES",
        column_default: null,
      });
      expect(await checkConstraints(db.pool, "sessions")).toEqual([]);
      expect((await columnInfo(db.pool, "app_settings", "value"))?.data_type).toBe("text");
      expect((await columnInfo(db.pool, "scheduled_tasks", "config"))?.data_type).toBe("text");
      expect(await tableExists(db.pool, "plan_approvals")).toBe(false);
      expect(await tableExists(db.pool, "hosts")).toBe(false);
      expect(await schemaDump(db.pool)).toEqual(schemaBefore);

      // Every legacy row is byte-for-byte what was written, the valid 'chat' rows included.
      expect(await legacySnapshot(db.pool)).toEqual(rowsBefore);
      expect(await sessionModes(db.pool)).toEqual(
        Object.fromEntries(seed.sessions.map((s) => [s.id, s.mode])),
      );
      expect(await legacyTexts(db.pool)).toEqual({
        settings: Object.fromEntries(seed.settings.map((s) => [s.key, s.value])),
        tasks: Object.fromEntries(seed.tasks.map((t) => [t.id, t.config])),
      });

      // No half-applied state: once the row is fixed the same migrations apply cleanly.
      await db.pool.query(c.fix);
      expect(await migrateUp({ databaseUrl: db.url })).toEqual(AFTER_LEGACY);
      expect(await appliedNames(db.pool)).toEqual(ALL);
      const modes = await sessionModes(db.pool);
      expect(modes.s_chat).toBe("plan");
      expect(modes.s_agent).toBe("agent");
      expect(Object.values(modes).every((m) => m === "plan" || m === "agent")).toBe(true);
      const defaults = await db.pool.query<{ value: { mode: string } }>(
        "SELECT value FROM app_settings WHERE key = 'defaults'",
      );
      expect(defaults.rows[0]?.value.mode).toBe("plan");
      const taskModes = await db.pool.query<{ mode: string }>(
        "SELECT config ->> 'mode' AS mode FROM scheduled_tasks",
      );
      expect(taskModes.rows.every((r) => r.mode === "plan" || r.mode === "agent")).toBe(true);
      expect(await tableExists(db.pool, "plan_approvals")).toBe(true);
    },
  );
});
