// Edge cases of decodeParams beyond the generated properties: prototype keys, null prototypes, deep
// nesting, ids that could reach a subject or a path, limits, batches and nested session fields.
import { describe, expect, it } from "vitest";
import { AppError } from "./app-error.ts";
import {
  ClaimParams,
  decodeParams,
  PlansResolveParams,
  SessionCreateParams,
  SessionPromptParams,
  ToolsExecuteParams,
} from "./schemas.ts";
import { decode } from "./decode-properties.test-support.ts";

describe("decodeParams edges", () => {
  const execute = {
    sessionId: "s1",
    turnId: "t1",
    token: "tok",
    toolCallId: "c1",
    tool: "Read",
    args: {},
    batch: [{ toolCallId: "c1", tool: "Read" }],
  };

  it("refuses an own __proto__ key from JSON.parse instead of treating it as a prototype", () => {
    const body = JSON.parse('{"turnId":"t1","workerId":"w1","__proto__":{"admin":true}}');
    expect(Object.hasOwn(body, "__proto__")).toBe(true);
    expect(() => decodeParams(ClaimParams, body)).toThrow(AppError);
  });

  it("accepts a null-prototype object with valid fields", () => {
    const body = Object.assign(Object.create(null) as Record<string, unknown>, {
      turnId: "t1",
      workerId: "w1",
    });
    expect(decodeParams(ClaimParams, body)).toBe(body);
  });

  it("handles very deep nesting without a stack overflow", () => {
    const deep = JSON.parse(`${"[".repeat(50_000)}1${"]".repeat(50_000)}`);
    expect(decodeParams(ToolsExecuteParams, { ...execute, args: { deep } }).args.deep).toBe(deep);
    expect(decode(ClaimParams, { turnId: "t1", workerId: "w1", deep }).accepted).toBe(false);
    expect(decode(ClaimParams, { turnId: deep, workerId: "w1" }).accepted).toBe(false);
    expect(decode(ClaimParams, deep).accepted).toBe(false);
  });

  it("refuses ids that could reach a subject or a path: dots, wildcards, spaces, a trailing newline", () => {
    for (const bad of [
      "a.b",
      "a>",
      ">",
      "*",
      "a b",
      "t1\n",
      "\nt1",
      "../x",
      "t1 ",
      "ä",
      "a".repeat(65),
      "",
    ]) {
      expect(decode(ClaimParams, { turnId: bad, workerId: "w1" }).accepted, JSON.stringify(bad)).toBe(false);
      expect(decode(SessionPromptParams, { sessionId: bad, text: "hi" }).accepted, JSON.stringify(bad)).toBe(
        false,
      );
    }
    expect(decode(ClaimParams, { turnId: "a".repeat(64), workerId: "w1" }).accepted).toBe(true);
  });

  it("refuses text one code point over the limit and a non-integer or negative version", () => {
    expect(decode(SessionPromptParams, { sessionId: "s1", text: "x".repeat(200_001) }).accepted).toBe(false);
    expect(decode(SessionPromptParams, { sessionId: "s1", text: "" }).accepted).toBe(false);
    const resolve = { proposalId: "p", sessionId: "s", turnId: "t", toolCallId: "c", action: "approve" };
    for (const version of [1.5, -1, "1", null]) {
      expect(decode(PlansResolveParams, { ...resolve, version }).accepted, String(version)).toBe(false);
    }
  });

  it("refuses a bad batch entry and an empty batch", () => {
    expect(decode(ToolsExecuteParams, { ...execute, batch: [] }).accepted).toBe(false);
    expect(
      decode(ToolsExecuteParams, { ...execute, batch: [{ toolCallId: "", tool: "Read" }] }).accepted,
    ).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, batch: [{ tool: "Read" }] }).accepted).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, batch: ["c1"] }).accepted).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, batch: [{ toolCallId: "c1", tool: "" }] }).accepted).toBe(
      false,
    );
    expect(
      decode(ToolsExecuteParams, { ...execute, batch: [{ toolCallId: "c1", tool: "Read", extra: 1 }] })
        .accepted,
    ).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, args: [] }).accepted).toBe(false);
  });

  it("refuses bad nested session fields: model extra key, empty provider, bad approver", () => {
    const base = { projectId: "p1" };
    expect(
      decode(SessionCreateParams, { ...base, model: { provider: "x", model: "y", z: 1 } }).accepted,
    ).toBe(false);
    expect(decode(SessionCreateParams, { ...base, model: { provider: "", model: "y" } }).accepted).toBe(
      false,
    );
    expect(decode(SessionCreateParams, { ...base, approvers: ["bob", "eve.>"] }).accepted).toBe(false);
    expect(decode(SessionCreateParams, { ...base, mode: "chat" }).accepted).toBe(false);
    expect(decode(SessionCreateParams, { ...base, permissionMode: "Auto" }).accepted).toBe(false);
  });

  it("names the problems in the error details", () => {
    const out = decode(ClaimParams, { turnId: "a.b" });
    expect(out.accepted).toBe(false);
    if (!out.accepted) {
      expect(out.error.toWire()).toMatchObject({ code: "INVALID_PARAMS", retriable: false });
      expect(JSON.stringify(out.error.details)).toContain("turnId");
    }
  });
});
