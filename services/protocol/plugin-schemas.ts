// Wire schemas of the plugin methods (docs/protocol.md, "Plugins") and of a plugin tool call, with the
// manifest checks TypeBox cannot express: no built-in tool name, no duplicate names, risk normalised
// (missing or invalid counts as medium, docs/protocol.md "Plugins").
import { type Static, type TSchema, Type } from "typebox";
import { Compile } from "typebox/compile";
import { AppError } from "./app-error.ts";
import type { ToolResultText } from "./agent-schemas.ts";
import { PageNext } from "./pages.ts";
import { Id, Nullable, Timestamp } from "./values.ts";

/** A subject token: plugin ids and tool names become parts of `<prefix>.plugin.<pluginId>.<tool>`. */
const Token = Id;

const PluginRiskSchema = Type.Union([Type.Literal("low"), Type.Literal("medium"), Type.Literal("high")]);
export type PluginRisk = Static<typeof PluginRiskSchema>;

/** The built-in tools of the host (docs/protocol.md); a plugin may not register one of these names. */
export const BUILTIN_TOOLS_LIST = [
  "Read",
  "Glob",
  "Grep",
  "Write",
  "Edit",
  "Bash",
  "EnterPlanMode",
  "ExitPlanMode",
  "BrowserPreview",
  "new_context",
] as const;
/** A built-in tool's name; machines/tool-policy.ts keys its TOOLS table by exactly these. */
export type BuiltinToolName = (typeof BUILTIN_TOOLS_LIST)[number];
export const BUILTIN_TOOL_NAMES: ReadonlySet<string> = new Set(BUILTIN_TOOLS_LIST);

export const PluginToolSchema = Type.Object(
  {
    name: Token,
    description: Type.String({ maxLength: 4000 }),
    /** A JSON schema object describing the tool's arguments, shown to the model as is. */
    parameters: Type.Record(Type.String(), Type.Unknown()),
    /** low | medium | high; anything else, or nothing, counts as medium. */
    risk: Type.Optional(Type.Unknown()),
  },
  { additionalProperties: false },
);

export const PluginManifestSchema = Type.Object(
  {
    id: Token,
    name: Type.Optional(Type.String({ maxLength: 200 })),
    tools: Type.Array(PluginToolSchema, { minItems: 1, maxItems: 100 }),
  },
  { additionalProperties: false },
);

export const PluginsRegisterParams = Type.Object(
  { manifest: PluginManifestSchema },
  { additionalProperties: false },
);
export type PluginsRegisterParams = Static<typeof PluginsRegisterParams>;

export const PluginRef = Type.Object({ pluginId: Token }, { additionalProperties: false });
export type PluginRef = Static<typeof PluginRef>;

export const PluginToolManifest = Type.Object({
  name: Type.String(),
  description: Type.String(),
  parameters: Type.Record(Type.String(), Type.Unknown()),
  risk: PluginRiskSchema,
});
export type PluginToolManifest = Static<typeof PluginToolManifest>;

/** A manifest as stored: every tool with a normalised risk. */
export interface PluginManifest {
  id: string;
  name?: string;
  tools: PluginToolManifest[];
}

export const PluginView = Type.Object({
  id: Type.String(),
  name: Nullable(Type.String()),
  enabled: Type.Boolean(),
  tools: Type.Array(PluginToolManifest),
  registeredBy: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type PluginView = Static<typeof PluginView>;

export const PluginList = Type.Object({ plugins: Type.Array(PluginView), next: PageNext });

/** Missing or invalid risk counts as medium. */
export function normaliseRisk(risk: unknown): PluginRisk {
  return risk === "low" || risk === "high" ? risk : "medium";
}

/** Checks a decoded manifest beyond its schema and normalises it; a violation is INVALID_PARAMS. */
export function normaliseManifest(m: Static<typeof PluginManifestSchema>): PluginManifest {
  const seen = new Set<string>();
  const tools: PluginToolManifest[] = [];
  for (const t of m.tools) {
    if (BUILTIN_TOOL_NAMES.has(t.name))
      throw new AppError("INVALID_PARAMS", `plugin tool ${t.name} collides with a built-in tool`, {
        details: { field: "tools.name", tool: t.name },
      });
    if (seen.has(t.name))
      throw new AppError("INVALID_PARAMS", `plugin tool ${t.name} is listed twice`, {
        details: { field: "tools.name", tool: t.name },
      });
    seen.add(t.name);
    try {
      Compile(t.parameters as TSchema);
    } catch (err) {
      throw new AppError("INVALID_PARAMS", `plugin tool ${t.name}: parameters is not a usable JSON schema`, {
        details: { field: "tools.parameters", tool: t.name, reason: (err as Error).message },
      });
    }
    tools.push({
      name: t.name,
      description: t.description,
      parameters: t.parameters,
      risk: normaliseRisk(t.risk),
    });
  }
  return { id: m.id, ...(m.name !== undefined ? { name: m.name } : {}), tools };
}

/** The body the host sends on `<prefix>.plugin.<pluginId>.<tool>`, only after the policy allowed it. */
export interface PluginCallRequest {
  sessionId: string;
  turnId: string;
  toolCallId: string;
  args: Record<string, unknown>;
}

/** The `result` of a plugin's reply envelope. */
export interface PluginCallResult {
  content: ToolResultText[];
  isError?: boolean;
}
