import { describe, expect, it } from "vitest";
import { UsageError } from "./cli-error.ts";
import {
  approveMode,
  parseModelSpec,
  projectCreateParams,
  resolveParams,
  sessionCreateParams,
  timeoutMs,
} from "./cli-params.ts";

const proposal = { proposalId: "p1", sessionId: "s1", turnId: "t1", toolCallId: "call-1", version: 3 };

describe("projectCreateParams", () => {
  it("makes the root absolute against the cwd", () => {
    expect(projectCreateParams({ name: "demo", root: "ws/a" }, "/home/u")).toEqual({
      name: "demo",
      workspaceRoot: "/home/u/ws/a",
    });
    expect(projectCreateParams({ name: "demo", root: "/tmp/x/" }, "/home/u").workspaceRoot).toBe("/tmp/x");
  });
});

describe("parseModelSpec", () => {
  it("splits at the first slash", () => {
    expect(parseModelSpec("anthropic/claude-sonnet-4-5")).toEqual({
      provider: "anthropic",
      model: "claude-sonnet-4-5",
    });
    expect(parseModelSpec("openrouter/meta/llama")).toEqual({ provider: "openrouter", model: "meta/llama" });
  });
  it.each(["claude", "/model", "provider/", ""])("refuses %j", (spec) => {
    expect(() => parseModelSpec(spec)).toThrow(UsageError);
  });
});

describe("sessionCreateParams", () => {
  it("sends only what was given", () => {
    expect(sessionCreateParams({ project: "p1" })).toEqual({ projectId: "p1" });
  });

  it("maps --demo to the scripted demo model", () => {
    expect(sessionCreateParams({ project: "p1", mode: "plan", demo: true })).toEqual({
      projectId: "p1",
      mode: "plan",
      model: { provider: "scripted", model: "demo" },
    });
  });

  it("maps --script to a scripted model carrying the steps", () => {
    const steps = [{ text: "hi" }, { toolCalls: [{ name: "Read", args: { path: "a" } }] }];
    expect(sessionCreateParams({ project: "p1", script: { file: "s.json", steps } }).model).toEqual({
      provider: "scripted",
      model: "script",
      script: steps,
    });
  });

  it("maps every other option", () => {
    expect(
      sessionCreateParams({
        project: "p1",
        title: "T",
        mode: "agent",
        permissionMode: "accept-edits",
        model: "a/b",
        approver: ["bob", "eve"],
      }),
    ).toEqual({
      projectId: "p1",
      title: "T",
      mode: "agent",
      permissionMode: "accept-edits",
      model: { provider: "a", model: "b" },
      approvers: ["bob", "eve"],
    });
  });

  it("leaves out an empty approver list", () => {
    expect(sessionCreateParams({ project: "p1", approver: [] })).toEqual({ projectId: "p1" });
  });

  it.each([
    { demo: true, model: "a/b" },
    { demo: true, script: { file: "f", steps: [] } },
    { model: "a/b", script: { file: "f", steps: [] } },
  ])("refuses more than one model choice: %o", (extra) => {
    expect(() => sessionCreateParams({ project: "p1", ...extra })).toThrow(UsageError);
  });

  it.each([
    { mode: "chat" },
    { permissionMode: "yolo" },
    { script: { file: "f", steps: { steps: [] } } },
    { script: { file: "f", steps: [1] } },
  ])("refuses invalid values: %o", (extra) => {
    expect(() => sessionCreateParams({ project: "p1", ...extra })).toThrow(UsageError);
  });
});

describe("approveMode", () => {
  it.each(["ask", "accept-edits", "auto"])("accepts %s", (m) => {
    expect(approveMode(m)).toBe(m);
  });
  it.each([undefined, "", "inherit", "Auto", "accept_edits"])("refuses %j: no mode is ever assumed", (m) => {
    expect(() => approveMode(m)).toThrow(UsageError);
  });
});

describe("resolveParams", () => {
  it("fills the identity fields from the proposal for an approve", () => {
    expect(resolveParams(proposal, "approve", "auto")).toEqual({
      ...proposal,
      action: "approve",
      targetPermissionMode: "auto",
    });
  });
  it("sends no mode for a reject", () => {
    expect(resolveParams(proposal, "reject")).toEqual({ ...proposal, action: "reject" });
  });
  it("refuses an approve without a mode", () => {
    expect(() => resolveParams(proposal, "approve")).toThrow(UsageError);
  });
});

describe("timeoutMs", () => {
  it("converts seconds", () => {
    expect(timeoutMs("300")).toBe(300_000);
    expect(timeoutMs("0.5")).toBe(500);
  });
  it.each(["0", "-1", "abc", "", "100000"])("refuses %j", (v) => {
    expect(() => timeoutMs(v)).toThrow(UsageError);
  });
});
