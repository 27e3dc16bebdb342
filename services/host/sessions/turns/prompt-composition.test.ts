// The prompt and tools of each mode and turn kind: the sentences each prompt must say, the tools exactly
// the TOOLS table's offer (plugins in Agent only), and the bounded project instructions.
import { describe, expect, it } from "vitest";
import { offeredTools, TOOLS } from "../../../../machines/tool-policy.ts";
import type { ToolSpec } from "../../../protocol/schemas.ts";
import {
  boundInstructions,
  buildSystemPrompt,
  buildTools,
  INSTRUCTIONS_CUT_MARKER,
  INSTRUCTIONS_HEADING,
  MAX_INSTRUCTIONS_BYTES,
} from "./prompt-composition.ts";

const PROMPT = { turnKind: "prompt" } as const;
const EXECUTION = { turnKind: "execution" } as const;

/** What the Plan prompt must tell the Agent (issue #13 clause 6), one pattern per rule. */
const PLAN_RULES: readonly RegExp[] = [
  /Inspect the relevant files, tests and docs/,
  /name the affected behaviour and the files/,
  /validation steps/,
  /migration steps/,
  /recovery steps/,
  /List the open questions/,
  /Submit one complete Markdown plan with ExitPlanMode/,
  /as the only call of its batch/,
  /Never claim the plan was executed/,
  /Bash asks a person first under the ask and accept-edits permission modes and may change files under auto/,
  /Write, Edit and plugin tools are unavailable/,
];

const plugin: ToolSpec = {
  name: "echo_upper",
  description: "Echo in upper case.",
  parameters: { type: "object", properties: { text: { type: "string" } } },
};

describe("buildSystemPrompt", () => {
  it("Plan says every planning rule and nothing of Agent's EnterPlanMode advice", () => {
    const p = buildSystemPrompt("plan", PROMPT, {});
    for (const rule of PLAN_RULES) expect(p).toMatch(rule);
    expect(p).not.toMatch(/call EnterPlanMode alone/);
    expect(buildSystemPrompt("plan", EXECUTION, {})).toBe(p);
  });

  it("Agent keeps today's content: EnterPlanMode alone when a plan should be approved first", () => {
    const p = buildSystemPrompt("agent", PROMPT, {});
    expect(p).toMatch(/^You are the pi coding agent working in the session's workspace\./);
    expect(p).toMatch(/When a task needs a plan a person should approve first, call EnterPlanMode alone\./);
    expect(p).not.toMatch(/approved plan|executes a plan/);
    for (const rule of PLAN_RULES) expect(p).not.toMatch(rule);
  });

  it("an execution turn says it executes an approved plan that arrives in the opening message", () => {
    const p = buildSystemPrompt("agent", EXECUTION, {});
    expect(p.startsWith(buildSystemPrompt("agent", PROMPT, {}))).toBe(true);
    expect(p).toMatch(/This turn executes a plan a person approved/);
    expect(p).toMatch(/in this turn's opening message/);
  });

  it("appends the project's instructions under the heading; none, empty or blank adds nothing", () => {
    for (const mode of ["agent", "plan"] as const) {
      const base = buildSystemPrompt(mode, PROMPT, {});
      for (const none of [undefined, null, "", "  \n\t"])
        expect(buildSystemPrompt(mode, PROMPT, { instructions: none })).toBe(base);
      const p = buildSystemPrompt(mode, PROMPT, { instructions: "Run npm test before you finish.\n" });
      expect(p.startsWith(`${base}\n\n${INSTRUCTIONS_HEADING}\n`)).toBe(true);
      expect(p.endsWith("Run npm test before you finish.")).toBe(true);
      expect(p).not.toContain(INSTRUCTIONS_CUT_MARKER);
    }
  });

  it("long instructions are cut to the bound with the marker", () => {
    const p = buildSystemPrompt("agent", PROMPT, { instructions: "x".repeat(100 * 1024) });
    expect(p).toContain(`${"x".repeat(MAX_INSTRUCTIONS_BYTES)}\n\n${INSTRUCTIONS_CUT_MARKER}`);
    expect(p).not.toContain("x".repeat(MAX_INSTRUCTIONS_BYTES + 1));
  });
});

describe("boundInstructions", () => {
  it("keeps text within the bound as it is", () => {
    expect(boundInstructions("abc", 3)).toBe("abc");
    expect(boundInstructions("é", 2)).toBe("é");
  });

  it("cuts at a character boundary, never inside a multi-byte character", () => {
    // "é" is 2 bytes, "€" 3, "😀" 4: every cut point of the bound falls before a whole character.
    for (const ch of ["é", "€", "😀"]) {
      for (let max = 1; max <= 12; max++) {
        const text = ch.repeat(10);
        const out = boundInstructions(text, max);
        if (Buffer.byteLength(text) <= max) continue;
        const [kept] = out.split(`\n\n${INSTRUCTIONS_CUT_MARKER}`);
        expect(out.endsWith(INSTRUCTIONS_CUT_MARKER)).toBe(true);
        expect(kept).not.toContain("\uFFFD");
        expect(Buffer.byteLength(kept!)).toBeLessThanOrEqual(max);
        expect(Buffer.byteLength(kept!)).toBeGreaterThan(max - Buffer.byteLength(ch));
        expect(text.startsWith(kept!)).toBe(true);
      }
    }
  });
});

describe("buildTools", () => {
  const names = (t: ToolSpec[]) => t.map((s) => s.name);

  it("is exactly the TOOLS table's offer per mode and turn kind; plugins only in Agent", () => {
    for (const state of [PROMPT, EXECUTION]) {
      expect(names(buildTools("agent", state, []))).toEqual(offeredTools("agent"));
      expect(names(buildTools("agent", state, [plugin]))).toEqual([...offeredTools("agent"), "echo_upper"]);
      expect(names(buildTools("plan", state, [plugin]))).toEqual(offeredTools("plan"));
    }
    expect(names(buildTools("plan", PROMPT, []))).toContain("ExitPlanMode");
    expect(names(buildTools("plan", PROMPT, []))).not.toContain("Write");
    expect(names(buildTools("plan", PROMPT, []))).not.toContain("Edit");
    expect(names(buildTools("plan", PROMPT, []))).not.toContain("EnterPlanMode");
    expect(names(buildTools("agent", PROMPT, []))).not.toContain("ExitPlanMode");
  });

  it("gives the table's specs as fresh copies: changing one changes neither the table nor a plugin", () => {
    const [read] = buildTools("agent", PROMPT, []);
    expect(read).toEqual({
      name: "Read",
      description: TOOLS.Read.spec.description,
      parameters: TOOLS.Read.spec.parameters,
    });
    (read!.parameters as { required: string[] }).required.push("oops");
    expect(TOOLS.Read.spec.parameters.required).toEqual(["path"]);
    const given = buildTools("agent", PROMPT, [plugin]).at(-1)!;
    (given.parameters as { type: string }).type = "changed";
    expect(plugin.parameters.type).toBe("object");
  });
});
