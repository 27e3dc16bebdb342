// The tool policy of DESIGN §7 as one pure function: (durable mode, tool class, effective permission
// mode, session grant, plugin risk) -> allow | prompt | deny(code). No I/O; the host supplies the facts.
// Plan denials come before any grant, permission mode or risk.

export type Mode = "agent" | "plan";
export type EffectivePermission = "ask" | "accept-edits" | "auto";
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

export type PolicyDecision =
  | { kind: "allow" }
  | { kind: "prompt" }
  | {
      kind: "deny";
      code:
        | "WRITE_DISABLED_IN_PLAN"
        | "EDIT_DISABLED_IN_PLAN"
        | "TOOL_DISABLED_IN_PLAN"
        | "TOOL_NOT_FOUND"
        | "PLUGIN_DISABLED_IN_PLAN"
        | "PLAN_ALREADY_ACTIVE"
        | "PLAN_NOT_ACTIVE"
        | "TOOL_MUST_BE_ALONE";
    };

const READ_TOOLS = new Set(["Read", "Glob", "Grep", "BrowserPreview", "new_context"]);
export const SOLE_CALL_TOOLS = new Set(["EnterPlanMode", "ExitPlanMode"]);

export function classifyTool(name: string, isPlugin = false): ToolClass {
  if (READ_TOOLS.has(name)) return "read";
  switch (name) {
    case "Write":
      return "write";
    case "Edit":
      return "edit";
    case "Bash":
      return "bash";
    case "EnterPlanMode":
      return "enter_plan";
    case "ExitPlanMode":
      return "exit_plan";
  }
  return isPlugin ? "plugin" : "unknown";
}

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
}

export function decideTool(input: PolicyInput): PolicyDecision {
  if (input.batch && batchViolation(input.batch)) return { kind: "deny", code: "TOOL_MUST_BE_ALONE" };
  const base = baseDecision(input);
  if (base.kind === "prompt" && input.sessionGrant) return { kind: "allow" };
  return base;
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
      const risk = pluginRisk === "low" || pluginRisk === "high" ? pluginRisk : "medium";
      if (risk === "low" || permission === "auto") return { kind: "allow" };
      return { kind: "prompt" };
    }
    case "unknown":
      return { kind: "deny", code: plan ? "TOOL_DISABLED_IN_PLAN" : "TOOL_NOT_FOUND" };
  }
}
