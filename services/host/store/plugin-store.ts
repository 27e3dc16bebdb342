// Registered plugins (docs/architecture.md "Tools"): manifests in Postgres, read on every plugin tool
// call and every Agent claim so enable and disable take effect at once. Calls: tools/plugin-caller.ts.
import type { TSchema } from "typebox";
import { Compile } from "typebox/compile";
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type { PluginManifest, PluginToolManifest, PluginView } from "../../protocol/plugin-schemas.ts";
import type { AfterPageParams, ToolSpec } from "../../protocol/schemas.ts";
import { type BoundedPage, boundPage } from "./bounded-page.ts";
import { encodePosition } from "../../protocol/pages.ts";
import { appendAudit } from "./audit-log.ts";
import type { Clock } from "../clock.ts";
import { type Db, prepared, withTransaction } from "./db.ts";
import { keysetWindow } from "./keyset-sql.ts";

interface PluginRow {
  id: string;
  manifest: PluginManifest;
  enabled: boolean;
  registered_by: string;
  created_at: Date;
  updated_at: Date;
}

function view(r: PluginRow): PluginView {
  return {
    id: r.id,
    name: r.manifest.name ?? null,
    enabled: r.enabled,
    tools: r.manifest.tools,
    registeredBy: r.registered_by,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/** Compiled argument validators by schema text (manifests change rarely; bounded all the same). */
const validators = new Map<string, ReturnType<typeof Compile>>();
const MAX_VALIDATORS = 1000;

/**
 * Checks a call's arguments against the plugin tool's JSON schema (TypeBox validates plain JSON
 * schema). Returns the problems (`path: message`), empty when the arguments fit. The host checks
 * before asking a person or calling the plugin, so a malformed call reaches neither.
 */
export function pluginArgProblems(tool: PluginToolManifest, args: Record<string, unknown>): string[] {
  const key = JSON.stringify(tool.parameters);
  let v = validators.get(key);
  if (!v) {
    if (validators.size >= MAX_VALIDATORS) validators.clear();
    try {
      v = Compile(tool.parameters as TSchema);
    } catch (err) {
      // Registration refuses such schemas; a row that predates that check still refuses the call.
      return [`the tool's schema cannot be used: ${(err as Error).message}`];
    }
    validators.set(key, v);
  }
  if (v.Check(args)) return [];
  return [...v.Errors(args)].slice(0, 10).map((e) => `${e.instancePath || "/"}: ${e.message}`);
}

/** The enabled plugin tool with this name, or null (unknown or disabled). One read per call. */
export async function findPluginTool(
  db: Db,
  name: string,
): Promise<{ pluginId: string; tool: PluginToolManifest } | null> {
  const r = await db.query(
    `SELECT p.id, t AS tool FROM plugins p, jsonb_array_elements(p.manifest->'tools') t
      WHERE p.enabled AND t->>'name' = $1 ORDER BY p.id LIMIT 1`,
    [name],
  );
  const row = r.rows[0];
  return row ? { pluginId: row.id, tool: row.tool as PluginToolManifest } : null;
}

/** What an Agent turn is offered besides the built-ins: every enabled plugin tool. Never for Plan. */
const PLUGIN_TOOL_SPECS = prepared(
  "plugin-tool-specs",
  `SELECT t AS tool FROM plugins p, jsonb_array_elements(p.manifest->'tools') t
    WHERE p.enabled ORDER BY p.id, t->>'name'`,
);

export async function pluginToolSpecs(db: Db): Promise<ToolSpec[]> {
  // Prepared: read at every claim of a turn in Agent.
  const r = await db.query(PLUGIN_TOOL_SPECS([]));
  return r.rows.map((row) => {
    const t = row.tool as PluginToolManifest;
    return { name: t.name, description: t.description, parameters: t.parameters };
  });
}

export function createPluginStore(deps: { db: Db; clock: Clock }) {
  const { db, clock } = deps;
  return {
    /** Registers or replaces a manifest (enabled). A tool name another plugin has is refused (INVALID_PARAMS). */
    async register(principal: string, manifest: PluginManifest): Promise<Result<PluginView>> {
      return withTransaction(db, async (tx): Promise<Result<PluginView>> => {
        // Serializes registrations so two plugins cannot claim one tool name at the same time.
        await tx.query("LOCK TABLE plugins IN SHARE ROW EXCLUSIVE MODE");
        const names = manifest.tools.map((t) => t.name);
        const clash = await tx.query(
          `SELECT p.id, t->>'name' AS tool FROM plugins p, jsonb_array_elements(p.manifest->'tools') t
            WHERE p.id <> $1 AND t->>'name' = ANY($2::text[]) LIMIT 1`,
          [manifest.id, names],
        );
        if (clash.rows[0])
          return refuse(
            "INVALID_PARAMS",
            `plugin tool ${clash.rows[0].tool} is already registered by plugin ${clash.rows[0].id}`,
            { field: "tools.name", tool: clash.rows[0].tool, pluginId: clash.rows[0].id },
          );
        const now = clock.date();
        const r = await tx.query(
          `INSERT INTO plugins (id, manifest, enabled, registered_by, created_at, updated_at)
           VALUES ($1, $2, true, $3, $4, $4)
           ON CONFLICT (id) DO UPDATE SET manifest = EXCLUDED.manifest, enabled = true,
             registered_by = EXCLUDED.registered_by, updated_at = EXCLUDED.updated_at
           RETURNING *`,
          [manifest.id, JSON.stringify(manifest), principal, now],
        );
        await appendAudit(tx, {
          at: now,
          principal,
          action: "plugin.register",
          decision: "allow",
          details: {
            pluginId: manifest.id,
            tools: manifest.tools.map((t) => ({ name: t.name, risk: t.risk })),
          },
        });
        return ok(view(r.rows[0] as PluginRow));
      });
    },

    /** One page of the registered plugins by id (a keyset after `after`). */
    async list(p: AfterPageParams): Promise<BoundedPage<PluginView>> {
      const w = keysetWindow(
        { limit: p.limit, cursor: p.after },
        { keys: ["id"], direction: "after", first: 1 },
      );
      const r = await db.query<PluginRow>(
        `SELECT * FROM plugins WHERE ${w.condition} ORDER BY ${w.order} LIMIT ${w.limit + 1}`,
        w.params,
      );
      return boundPage(r.rows, { limit: w.limit, view, position: (row) => encodePosition([], row.id) });
    },

    /** Enables or disables a plugin; audited when it changes anything. An unknown id: PLUGIN_NOT_FOUND. */
    async setEnabled(principal: string, pluginId: string, enabled: boolean): Promise<Result<PluginView>> {
      return withTransaction(db, async (tx): Promise<Result<PluginView>> => {
        const cur = await tx.query("SELECT * FROM plugins WHERE id = $1 FOR UPDATE", [pluginId]);
        const row = cur.rows[0] as PluginRow | undefined;
        if (!row) return refuse("PLUGIN_NOT_FOUND");
        if (row.enabled === enabled) return ok(view(row));
        const now = clock.date();
        const r = await tx.query(
          "UPDATE plugins SET enabled = $2, updated_at = $3 WHERE id = $1 RETURNING *",
          [pluginId, enabled, now],
        );
        await appendAudit(tx, {
          at: now,
          principal,
          action: enabled ? "plugin.enable" : "plugin.disable",
          decision: "allow",
          details: { pluginId },
        });
        return ok(view(r.rows[0] as PluginRow));
      });
    },
  };
}
export type PluginStore = ReturnType<typeof createPluginStore>;
