// The policy table of docs/architecture.md ("Tools"), case by case: every tool class x both modes x every permission mode
// x with and without a session grant.
import { describe, expect, it } from "vitest";
import { BUILTIN_TOOL_NAMES } from "../services/protocol/plugin-schemas.ts";
import {
  batchViolation,
  classifyTool,
  decideTool,
  effectivePermission,
  offeredTools,
  riskOfTool,
  TOOLS,
  type ToolClass,
} from "./tool-policy.ts";

const PERMS = ["ask", "accept-edits", "auto"] as const;

type Expect = string; // "allow" | "prompt" | deny code
const TABLE: Record<
  ToolClass,
  { agent: Record<(typeof PERMS)[number], Expect>; plan: Record<(typeof PERMS)[number], Expect> }
> = {
  read: {
    agent: { ask: "allow", "accept-edits": "allow", auto: "allow" },
    plan: { ask: "allow", "accept-edits": "allow", auto: "allow" },
  },
  write: {
    agent: { ask: "prompt", "accept-edits": "allow", auto: "allow" },
    plan: {
      ask: "WRITE_DISABLED_IN_PLAN",
      "accept-edits": "WRITE_DISABLED_IN_PLAN",
      auto: "WRITE_DISABLED_IN_PLAN",
    },
  },
  edit: {
    agent: { ask: "prompt", "accept-edits": "allow", auto: "allow" },
    plan: {
      ask: "EDIT_DISABLED_IN_PLAN",
      "accept-edits": "EDIT_DISABLED_IN_PLAN",
      auto: "EDIT_DISABLED_IN_PLAN",
    },
  },
  bash: {
    agent: { ask: "prompt", "accept-edits": "prompt", auto: "allow" },
    plan: { ask: "prompt", "accept-edits": "prompt", auto: "allow" },
  },
  enter_plan: {
    agent: { ask: "allow", "accept-edits": "allow", auto: "allow" },
    plan: { ask: "PLAN_ALREADY_ACTIVE", "accept-edits": "PLAN_ALREADY_ACTIVE", auto: "PLAN_ALREADY_ACTIVE" },
  },
  exit_plan: {
    agent: { ask: "PLAN_NOT_ACTIVE", "accept-edits": "PLAN_NOT_ACTIVE", auto: "PLAN_NOT_ACTIVE" },
    plan: { ask: "allow", "accept-edits": "allow", auto: "allow" },
  },
  plugin: {
    agent: { ask: "prompt", "accept-edits": "prompt", auto: "allow" },
    plan: {
      ask: "PLUGIN_DISABLED_IN_PLAN",
      "accept-edits": "PLUGIN_DISABLED_IN_PLAN",
      auto: "PLUGIN_DISABLED_IN_PLAN",
    },
  },
  unknown: {
    agent: { ask: "TOOL_NOT_FOUND", "accept-edits": "TOOL_NOT_FOUND", auto: "TOOL_NOT_FOUND" },
    plan: {
      ask: "TOOL_DISABLED_IN_PLAN",
      "accept-edits": "TOOL_DISABLED_IN_PLAN",
      auto: "TOOL_DISABLED_IN_PLAN",
    },
  },
};

const label = (d: ReturnType<typeof decideTool>) => (d.kind === "deny" ? d.code : d.kind);

describe("decideTool", () => {
  for (const [toolClass, modes] of Object.entries(TABLE) as Array<[ToolClass, (typeof TABLE)[ToolClass]]>) {
    for (const mode of ["agent", "plan"] as const) {
      for (const permission of PERMS) {
        const expected = modes[mode][permission];
        it(`${toolClass} in ${mode} under ${permission} -> ${expected}`, () => {
          expect(label(decideTool({ mode, toolClass, permission }))).toBe(expected);
          // A session grant turns a prompt into an allow and never lifts a denial.
          const granted = label(decideTool({ mode, toolClass, permission, sessionGrant: true }));
          expect(granted).toBe(expected === "prompt" ? "allow" : expected);
        });
      }
    }
  }

  it("plugin risk: low allows everywhere in Agent, missing or invalid counts as medium", () => {
    expect(
      label(decideTool({ mode: "agent", toolClass: "plugin", permission: "ask", pluginRisk: "low" })),
    ).toBe("allow");
    expect(
      label(decideTool({ mode: "agent", toolClass: "plugin", permission: "ask", pluginRisk: "bogus" })),
    ).toBe("prompt");
    expect(
      label(decideTool({ mode: "agent", toolClass: "plugin", permission: "auto", pluginRisk: "high" })),
    ).toBe("allow");
    expect(
      label(
        decideTool({
          mode: "plan",
          toolClass: "plugin",
          permission: "auto",
          pluginRisk: "low",
          sessionGrant: true,
        }),
      ),
    ).toBe("PLUGIN_DISABLED_IN_PLAN");
  });

  it("EnterPlanMode / ExitPlanMode not alone fail every call of the batch", () => {
    const batch = [{ tool: "Read" }, { tool: "ExitPlanMode" }];
    expect(batchViolation(batch)).toBe(true);
    expect(label(decideTool({ mode: "plan", toolClass: "read", permission: "auto", batch }))).toBe(
      "TOOL_MUST_BE_ALONE",
    );
    expect(label(decideTool({ mode: "plan", toolClass: "exit_plan", permission: "auto", batch }))).toBe(
      "TOOL_MUST_BE_ALONE",
    );
    expect(batchViolation([{ tool: "ExitPlanMode" }])).toBe(false);
    expect(batchViolation([{ tool: "Read" }, { tool: "Grep" }])).toBe(false);
  });

  it("classifies tools and resolves the permission mode session -> app default -> ask", () => {
    expect(classifyTool("Read")).toBe("read");
    expect(classifyTool("new_context")).toBe("read");
    expect(classifyTool("Frobnicate")).toBe("unknown");
    expect(classifyTool("Frobnicate", true)).toBe("plugin");
    expect(effectivePermission("inherit", "auto")).toBe("auto");
    expect(effectivePermission("accept-edits", "auto")).toBe("accept-edits");
    expect(effectivePermission("inherit", "inherit")).toBe("ask");
    expect(effectivePermission(null, undefined)).toBe("ask");
  });

  it("unattended runs: a prompt is PERMISSION_REQUIRED, EnterPlanMode PLAN_REQUIRES_INTERACTIVE_SESSION", () => {
    for (const toolClass of Object.keys(TABLE) as ToolClass[]) {
      for (const mode of ["agent", "plan"] as const) {
        for (const permission of PERMS) {
          const attended = modes(toolClass, mode, permission);
          const unattended = label(decideTool({ mode, toolClass, permission, unattended: true }));
          const expected =
            toolClass === "enter_plan" && attended === "allow"
              ? "PLAN_REQUIRES_INTERACTIVE_SESSION"
              : attended === "prompt"
                ? "PERMISSION_REQUIRED"
                : attended;
          expect(unattended, `${toolClass} ${mode} ${permission}`).toBe(expected);
          // A session grant already answered the prompt: nobody needs to be asked.
          const granted = label(
            decideTool({ mode, toolClass, permission, unattended: true, sessionGrant: true }),
          );
          expect(granted).toBe(attended === "prompt" ? "allow" : expected);
        }
      }
    }
  });

  it("a plugin call with arguments off its schema is INVALID_PARAMS, after the Plan denial", () => {
    const base = { toolClass: "plugin" as const, permission: "ask" as const, invalidArgs: true };
    expect(label(decideTool({ ...base, mode: "agent" }))).toBe("INVALID_PARAMS");
    expect(label(decideTool({ ...base, mode: "agent", unattended: true }))).toBe("INVALID_PARAMS");
    expect(label(decideTool({ ...base, mode: "plan" }))).toBe("PLUGIN_DISABLED_IN_PLAN");
  });
});

describe("TOOLS table", () => {
  it("offers each mode its tools in table order", () => {
    expect(offeredTools("agent")).toEqual([
      "Read",
      "Glob",
      "Grep",
      "Write",
      "Edit",
      "Bash",
      "BrowserPreview",
      "new_context",
      "EnterPlanMode",
    ]);
    expect(offeredTools("plan")).toEqual([
      "Read",
      "Glob",
      "Grep",
      "Bash",
      "BrowserPreview",
      "new_context",
      "ExitPlanMode",
    ]);
  });

  it("names exactly the built-ins the contract reserves (a plugin may not register them)", () => {
    expect(Object.keys(TOOLS).sort()).toEqual([...BUILTIN_TOOL_NAMES].sort());
  });

  it("classes and prompt risks come from the table; plugins keep their normalised risk", () => {
    for (const [name, tool] of Object.entries(TOOLS)) expect(classifyTool(name)).toBe(tool.class);
    expect(riskOfTool("Bash")).toBe("high");
    expect(riskOfTool("Write")).toBe("medium");
    expect(riskOfTool("Edit")).toBe("medium");
    expect(riskOfTool("deploy", "low")).toBe("low");
    expect(riskOfTool("deploy", "bogus")).toBe("medium");
    expect(riskOfTool("deploy")).toBe("medium");
  });
});

function modes(toolClass: ToolClass, mode: "agent" | "plan", permission: (typeof PERMS)[number]): string {
  return TABLE[toolClass][mode][permission];
}
