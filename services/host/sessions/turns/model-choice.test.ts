import { describe, expect, it } from "vitest";
import type { Result } from "../../../protocol/result.ts";
import { createModelChoice, parseDefaultModel } from "./model-choice.ts";

const code = (fn: () => Result<unknown>) => {
  const r = fn();
  return r.ok ? "ok" : r.refusal.code;
};

/** The chosen model's value, or the refusal's code. */
const chosen = (c: { choose: (m: never) => Result<unknown> }, m: unknown) => {
  const r = c.choose(m as never);
  return r.ok ? r.value : r.refusal.code;
};

describe("the model a session runs", () => {
  it("production without PI_DEFAULT_MODEL: a session must name its model; the scripted one is refused", () => {
    const c = createModelChoice({ devMode: false, defaultModel: null, providers: null });
    expect(c.defaultModel).toBeNull();
    expect(code(() => c.choose(undefined))).toBe("MODEL_NOT_CONFIGURED");
    expect(code(() => c.choose({ provider: "scripted", model: "demo" }))).toBe("MODEL_NOT_CONFIGURED");
    expect(chosen(c, { provider: "anthropic", model: "claude-x" })).toEqual({
      provider: "anthropic",
      model: "claude-x",
    });
  });

  it("development mode defaults to the scripted demo (announced by the host), and allows it", () => {
    const c = createModelChoice({ devMode: true, defaultModel: null, providers: null });
    expect(chosen(c, undefined)).toEqual({ provider: "scripted", model: "demo" });
  });

  it("PI_DEFAULT_MODEL and PI_MODEL_PROVIDERS decide", () => {
    const c = createModelChoice({
      devMode: false,
      defaultModel: parseDefaultModel("local-openai/qwen2.5-coder:7b"),
      providers: ["local-openai", "scripted"],
    });
    expect(chosen(c, undefined)).toEqual({ provider: "local-openai", model: "qwen2.5-coder:7b" });
    expect(chosen(c, { provider: "scripted", model: "t", script: [] })).toMatchObject({
      provider: "scripted",
    });
    expect(code(() => c.choose({ provider: "openai", model: "gpt" }))).toBe("MODEL_NOT_CONFIGURED");
  });

  it("PI_DEFAULT_MODEL must be provider/model", () => {
    for (const bad of ["nomodel", "/m", "p/"])
      expect(() => parseDefaultModel(bad)).toThrow(/provider\/model/);
    expect(parseDefaultModel(undefined)).toBeNull();
  });
});
