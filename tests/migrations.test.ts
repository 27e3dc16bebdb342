// Schema history against real Postgres: empty database up, up twice is a no-op, and the legacy
// chat -> plan mapping. A malformed legacy value rolling back: migrations-malformed.test.ts.
import { describe, expect, it } from "vitest";
import { migrateUp } from "../services/host/store/migrate.ts";
import {
  AFTER_LEGACY,
  ALL,
  appliedNames,
  baseSeed,
  LEGACY,
  legacySnapshot,
  schemaDump,
  seedLegacy,
  sessionModes,
  useFreshDatabases,
} from "./support/migrations.ts";
import { useLeakCheck } from "./support/stack-fixture.ts";

useLeakCheck("migrations");
const freshDb = useFreshDatabases();

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
