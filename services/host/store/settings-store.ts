// App settings (`app_settings` key 'defaults', jsonb {mode, permissionMode}): the default operating
// mode of new sessions and the default permission mode that `inherit` resolves to. The app default
// mode never changes an existing session and never a scheduled task's own mode.
import type {
  DefaultPermissionMode,
  SettingsSetParams,
  SettingsView,
} from "../../protocol/scheduling-schemas.ts";
import type { OperatingMode } from "../../protocol/schemas.ts";
import { EXECUTION_PERMISSION_MODES } from "../../protocol/modes.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, type Tx, withTransaction } from "./db.ts";

const PERMISSION_DEFAULTS: readonly string[] = EXECUTION_PERMISSION_MODES;

function toView(value: Record<string, unknown> | null | undefined): SettingsView {
  const mode: OperatingMode = value?.mode === "plan" ? "plan" : "agent";
  const pm = value?.permissionMode;
  const defaultPermissionMode = (
    typeof pm === "string" && PERMISSION_DEFAULTS.includes(pm) ? pm : "ask"
  ) as DefaultPermissionMode;
  return { defaultMode: mode, defaultPermissionMode };
}

export function createSettingsStore({ db, clock }: { db: Db; clock: Clock }) {
  async function read(q: Db | Tx, forUpdate = false) {
    const r = await q.query(
      `SELECT value FROM app_settings WHERE key = 'defaults'${forUpdate ? " FOR UPDATE" : ""}`,
    );
    return (r.rows[0]?.value ?? null) as Record<string, unknown> | null;
  }

  return {
    /** The defaults in force: agent and ask when nothing was ever set. */
    async get(): Promise<SettingsView> {
      return toView(await read(db));
    },

    /**
     * Changes the given defaults in one audited transaction; a set that changes nothing is accepted
     * and writes nothing. `inherit` never reaches here (the schema refuses it as INVALID_PARAMS).
     */
    async set(principal: string, p: SettingsSetParams): Promise<SettingsView> {
      return withTransaction(db, async (tx) => {
        // Serializes concurrent sets: the row lock, or, before the first set, the insert below.
        const stored = await read(tx, true);
        const before = toView(stored);
        if (p.defaultMode === undefined && p.defaultPermissionMode === undefined) return before;
        const after: SettingsView = {
          defaultMode: p.defaultMode ?? before.defaultMode,
          defaultPermissionMode: p.defaultPermissionMode ?? before.defaultPermissionMode,
        };
        const unchanged =
          stored !== null &&
          stored.mode === after.defaultMode &&
          stored.permissionMode === after.defaultPermissionMode;
        if (unchanged) return after;
        const value = { ...stored, mode: after.defaultMode, permissionMode: after.defaultPermissionMode };
        await tx.query(
          `INSERT INTO app_settings (key, value) VALUES ('defaults', $1)
           ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
          [JSON.stringify(value)],
        );
        await appendAudit(tx, {
          at: clock.date(),
          principal,
          action: "settings.set",
          details: { before, after },
        });
        return after;
      });
    },
  };
}

export type SettingsStore = ReturnType<typeof createSettingsStore>;
