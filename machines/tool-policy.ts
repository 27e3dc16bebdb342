// The tool policy of docs/architecture.md ("Tools") as one pure function, and the one TOOLS table of
// built-in tools (class, risk, spec). No I/O; the host supplies the facts. Plan denials come before any
// grant, permission mode or risk.
import type { ErrorCode } from "../services/protocol/error-codes.ts";
import type { ExecutionPermissionMode, Mode as OperatingMode } from "../services/protocol/modes.ts";
import type { BuiltinToolName as ContractToolName } from "../services/protocol/plugin-schemas.ts";

export type Mode = OperatingMode;
export type EffectivePermission = ExecutionPermissionMode;
export type ToolClass =
  | "read"
  | "write"
  | "edit"
  | "bash"
  | "enter_plan"
  | "exit_plan"
  | "plugin"
  | "unknown";
export type PluginRisk = "low" | "medium" | "high";

/** What the model is shown of a tool: its description and its parameters as plain JSON Schema. */
export interface ToolSpecLiteral {
  description: string;
  parameters: Record<string, unknown>;
}

export interface BuiltinTool {
  class: Exclude<ToolClass, "plugin" | "unknown">;
  /** The risk shown with a permission prompt for this tool. */
  risk: PluginRisk;
  /** The modes whose turns are offered the tool (offering is not authorization). */
  offered: readonly Mode[];
  spec: ToolSpecLiteral;
}

const str = { type: "string" };
const BOTH: readonly Mode[] = ["agent", "plan"];

/** Every built-in tool of the host, in the order the model is offered them. */
export const TOOLS = {
  Read: {
    class: "read",
    risk: "low",
    offered: BOTH,
    spec: {
      description: "Read a text file in the workspace. Optional 0-based line offset and line limit.",
      parameters: {
        type: "object",
        required: ["path"],
        properties: {
          path: str,
          offset: { type: "integer", minimum: 0 },
          limit: { type: "integer", minimum: 1 },
        },
      },
    },
  },
  Glob: {
    class: "read",
    risk: "low",
    offered: BOTH,
    spec: {
      description: "List workspace files matching a glob pattern such as **/*.ts.",
      parameters: { type: "object", required: ["pattern"], properties: { pattern: str } },
    },
  },
  Grep: {
    class: "read",
    risk: "low",
    offered: BOTH,
    spec: {
      description: "Search workspace files for a regular expression; optional path and file glob.",
      parameters: {
        type: "object",
        required: ["pattern"],
        properties: { pattern: str, path: str, glob: str },
      },
    },
  },
  Write: {
    class: "write",
    risk: "medium",
    offered: ["agent"],
    spec: {
      description: "Create or replace a file in the workspace with the given content.",
      parameters: { type: "object", required: ["path", "content"], properties: { path: str, content: str } },
    },
  },
  Edit: {
    class: "edit",
    risk: "medium",
    offered: ["agent"],
    spec: {
      description: "Replace the one exact occurrence of oldText with newText in a workspace file.",
      parameters: {
        type: "object",
        required: ["path", "oldText", "newText"],
        properties: { path: str, oldText: str, newText: str },
      },
    },
  },
  Bash: {
    class: "bash",
    risk: "high",
    offered: BOTH,
    spec: {
      description: "Run a shell command in the workspace sandbox (timeout in seconds, 1-300, default 60).",
      parameters: {
        type: "object",
        required: ["command"],
        properties: { command: str, timeout: { type: "integer", minimum: 1, maximum: 300 } },
      },
    },
  },
  BrowserPreview: {
    class: "read",
    risk: "low",
    offered: BOTH,
    spec: {
      description:
        "Open a page in a sandboxed headless browser and return its title, visible text and a screenshot path. file:// URLs inside the workspace and the origins the project lists load; loopback URLs (127.0.0.1, localhost, [::1]) are the browser sandbox's own, where nothing of the host's listens; every other request is blocked. waitMs (0-10000) waits after load.",
      parameters: {
        type: "object",
        required: ["url"],
        properties: { url: str, waitMs: { type: "integer", minimum: 0, maximum: 10000 } },
      },
    },
  },
  new_context: {
    class: "read",
    risk: "low",
    offered: BOTH,
    spec: {
      description: "Compact the conversation context: continue from the optional summary. Changes no file.",
      parameters: { type: "object", properties: { summary: str } },
    },
  },
  EnterPlanMode: {
    class: "enter_plan",
    risk: "low",
    offered: ["agent"],
    spec: {
      description:
        "Switch this session to Plan: inspect, then submit a plan for a person to approve. Must be the only tool call.",
      parameters: { type: "object", properties: {} },
    },
  },
  ExitPlanMode: {
    class: "exit_plan",
    risk: "low",
    offered: ["plan"],
    spec: {
      description:
        "Submit plan: the Markdown plan, a title and the question for the approver. Must be the only tool call; the run then waits for approval.",
      parameters: {
        type: "object",
        required: ["title", "markdown", "question"],
        properties: { title: str, markdown: str, question: str },
      },
    },
  },
} as const satisfies Record<ContractToolName, BuiltinTool>;

export type BuiltinToolName = keyof typeof TOOLS;
export const BUILTIN_TOOLS = Object.keys(TOOLS) as BuiltinToolName[];

export function isBuiltinTool(name: string): name is BuiltinToolName {
  return Object.hasOwn(TOOLS, name);
}

/** The built-in tools a turn in this mode is offered, in table order. */
export function offeredTools(mode: Mode): BuiltinToolName[] {
  return BUILTIN_TOOLS.filter((name) => (TOOLS[name].offered as readonly Mode[]).includes(mode));
}

export const SOLE_CALL_TOOLS: ReadonlySet<string> = new Set(
  BUILTIN_TOOLS.filter((n) => TOOLS[n].class === "enter_plan" || TOOLS[n].class === "exit_plan"),
);

export function classifyTool(name: string, isPlugin = false): ToolClass {
  if (isBuiltinTool(name)) return TOOLS[name].class;
  return isPlugin ? "plugin" : "unknown";
}

/** A plugin's registered risk, normalised: anything but low or high counts as medium. */
export function normalRisk(risk: unknown): PluginRisk {
  return risk === "low" || risk === "high" ? risk : "medium";
}

/** The risk shown with a prompt: a built-in's from the table, a plugin's as it registered it. */
export function riskOfTool(tool: string, pluginRisk?: string | null): PluginRisk {
  return isBuiltinTool(tool) ? TOOLS[tool].risk : normalRisk(pluginRisk);
}

export type DenyCode = Extract<
  ErrorCode,
  | "WRITE_DISABLED_IN_PLAN"
  | "EDIT_DISABLED_IN_PLAN"
  | "TOOL_DISABLED_IN_PLAN"
  | "TOOL_NOT_FOUND"
  | "PLUGIN_DISABLED_IN_PLAN"
  | "PLAN_ALREADY_ACTIVE"
  | "PLAN_NOT_ACTIVE"
  | "TOOL_MUST_BE_ALONE"
  | "INVALID_PARAMS"
  | "PLAN_REQUIRES_INTERACTIVE_SESSION"
  | "PERMISSION_REQUIRED"
>;

export type PolicyDecision = { kind: "allow" } | { kind: "prompt" } | { kind: "deny"; code: DenyCode };

/** Permission mode in force: the session's, else the app default, else ask. `inherit` is never final. */
export function effectivePermission(
  session: string | null | undefined,
  appDefault?: string | null,
): EffectivePermission {
  for (const v of [session, appDefault]) {
    if (v === "ask" || v === "accept-edits" || v === "auto") return v;
  }
  return "ask";
}

/** EnterPlanMode / ExitPlanMode must be alone in their assistant batch; otherwise every call of it fails. */
export function batchViolation(batch: ReadonlyArray<{ tool: string }>): boolean {
  return batch.length > 1 && batch.some((c) => SOLE_CALL_TOOLS.has(c.tool));
}

export interface PolicyInput {
  mode: Mode;
  toolClass: ToolClass;
  permission: EffectivePermission;
  /** An allow-session grant for this tool: skips a prompt, never lifts a deny. */
  sessionGrant?: boolean;
  pluginRisk?: PluginRisk | string | null;
  /** The assistant batch the call belongs to. */
  batch?: ReadonlyArray<{ tool: string }>;
  /** A plugin call whose arguments do not fit the tool's schema: reaches neither a person nor the plugin. */
  invalidArgs?: boolean;
  /** A scheduled (unattended) run: nobody is there to answer a prompt or approve a plan. */
  unattended?: boolean;
}

export function decideTool(input: PolicyInput): PolicyDecision {
  if (input.batch && batchViolation(input.batch)) return { kind: "deny", code: "TOOL_MUST_BE_ALONE" };
  const base = baseDecision(input);
  if (base.kind === "deny") return base;
  if (input.invalidArgs) return { kind: "deny", code: "INVALID_PARAMS" };
  const decided: PolicyDecision = base.kind === "prompt" && input.sessionGrant ? { kind: "allow" } : base;
  if (input.unattended) {
    // An unattended run never waits for a person: it cannot enter Plan, and a prompt is a denial.
    if (input.toolClass === "enter_plan") return { kind: "deny", code: "PLAN_REQUIRES_INTERACTIVE_SESSION" };
    if (decided.kind === "prompt") return { kind: "deny", code: "PERMISSION_REQUIRED" };
  }
  return decided;
}

function baseDecision({ mode, toolClass, permission, pluginRisk }: PolicyInput): PolicyDecision {
  const plan = mode === "plan";
  switch (toolClass) {
    case "read":
      return { kind: "allow" };
    case "enter_plan":
      return plan ? { kind: "deny", code: "PLAN_ALREADY_ACTIVE" } : { kind: "allow" };
    case "exit_plan":
      return plan ? { kind: "allow" } : { kind: "deny", code: "PLAN_NOT_ACTIVE" };
    case "write":
    case "edit":
      if (plan)
        return {
          kind: "deny",
          code: toolClass === "write" ? "WRITE_DISABLED_IN_PLAN" : "EDIT_DISABLED_IN_PLAN",
        };
      return permission === "ask" ? { kind: "prompt" } : { kind: "allow" };
    case "bash":
      return permission === "auto" ? { kind: "allow" } : { kind: "prompt" };
    case "plugin": {
      if (plan) return { kind: "deny", code: "PLUGIN_DISABLED_IN_PLAN" };
      if (normalRisk(pluginRisk) === "low" || permission === "auto") return { kind: "allow" };
      return { kind: "prompt" };
    }
    case "unknown":
      return { kind: "deny", code: plan ? "TOOL_DISABLED_IN_PLAN" : "TOOL_NOT_FOUND" };
  }
}
