import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ADVISORY_LOCKS } from "./advisory-locks.ts";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
const migrations = readdirSync(path.join(root, "migrations"))
  .filter((f) => f.endsWith(".sql"))
  .map((f) => readFileSync(path.join(root, "migrations", f), "utf8"))
  .join("\n");

describe("the advisory-lock registry", () => {
  it("gives every lock its own key within its lock space", () => {
    const keys = Object.values(ADVISORY_LOCKS).map((l) => `${l.space}:${l.key}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("holds every advisory lock the migrations spell out, and the write fence's is the registry's", () => {
    const spelled = [...migrations.matchAll(/pg_advisory\w*\((\d+)/g)].map((m) => Number(m[1]));
    const known = new Set<number>(Object.values(ADVISORY_LOCKS).map((l) => l.key));
    expect(spelled.length).toBeGreaterThan(0);
    expect(spelled.filter((k) => !known.has(k))).toEqual([]);
    expect(migrations).toContain(
      `pg_advisory_xact_lock_shared(${ADVISORY_LOCKS.writeFence.key}, hashtext(writer))`,
    );
  });

  it("holds node-pg-migrate's own lock id", () => {
    const bundle = path.join(root, "node_modules/node-pg-migrate/dist/bundle");
    const text = readdirSync(bundle)
      .filter((f) => f.endsWith(".js"))
      .map((f) => readFileSync(path.join(bundle, f), "utf8"))
      .join("\n");
    expect(text).toMatch(new RegExp(`PG_MIGRATE_LOCK_ID = ${ADVISORY_LOCKS.migrations.key}\\b`));
  });

  it("is the only place a lock key is written in the host's sources", () => {
    const dir = path.join(root, "services");
    const files = readdirSync(dir, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith(".ts") && !f.endsWith(".test.ts") && !f.endsWith("advisory-locks.ts"));
    const offenders = files.filter((f) => {
      const text = readFileSync(path.join(dir, f), "utf8");
      return Object.values(ADVISORY_LOCKS).some((l) => text.includes(String(l.key)));
    });
    expect(offenders).toEqual([]);
  });
});
