// A malformed legacy value rolls the migration back, leaving the legacy schema and data in force;
// once the value is fixed, the same migrations apply.
import { describe, expect, it } from "vitest";
import { migrateUp } from "../services/host/store/migrate.ts";
import {
  AFTER_LEGACY,
  ALL,
  appliedNames,
  baseSeed,
  checkConstraints,
  columnInfo,
  LEGACY,
  type LegacySeed,
  type LegacySession,
  legacySnapshot,
  legacyTexts,
  schemaDump,
  seedLegacy,
  sessionModes,
  tableExists,
  useFreshDatabases,
} from "./support/migrations.ts";
import { useLeakCheck } from "./support/stack-fixture.ts";

useLeakCheck("migrations-malformed");
const freshDb = useFreshDatabases();

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
