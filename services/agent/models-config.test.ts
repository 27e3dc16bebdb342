import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { resolveModel } from "./model-resolver.ts";
import { builtInModels, loadModelsConfig, MODEL_DEFAULTS, parseModelsConfig } from "./models-config.ts";

const local = (extra: Record<string, unknown> = {}) => ({
  providers: {
    "local-openai": {
      baseUrl: "http://127.0.0.1:11434/v1/",
      api: "openai-completions",
      apiKey: "ollama",
      models: [{ id: "qwen2.5-coder:7b" }],
      ...extra,
    },
  },
});

const parse = (raw: unknown, env: NodeJS.ProcessEnv = {}) => parseModelsConfig(raw, env, "models.json");

describe("parseModelsConfig", () => {
  it("builds pi-ai models with pi's defaults from a minimal entry", () => {
    const reg = parse(local());
    expect(reg.fileProviders).toEqual(["local-openai"]);
    const found = reg.lookup("local-openai", "qwen2.5-coder:7b");
    expect(found).toEqual({
      ok: true,
      apiKey: "ollama",
      model: {
        id: "qwen2.5-coder:7b",
        name: "qwen2.5-coder:7b",
        api: "openai-completions",
        provider: "local-openai",
        baseUrl: "http://127.0.0.1:11434/v1",
        reasoning: false,
        input: ["text"],
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
        contextWindow: MODEL_DEFAULTS.contextWindow,
        maxTokens: MODEL_DEFAULTS.maxTokens,
      },
    });
  });

  it("takes every model field, a model-level api and headers", () => {
    const reg = parse(
      {
        providers: {
          corp: {
            baseUrl: "https://llm.example.com",
            api: "openai-completions",
            apiKey: "CORP_KEY",
            headers: { "x-team": "TEAM_HEADER", "x-static": "fixed" },
            models: [
              {
                id: "big",
                name: "Big",
                api: "anthropic-messages",
                contextWindow: 200000,
                maxTokens: 8192,
                reasoning: true,
                input: ["text", "image"],
                cost: { input: 3, output: 15 },
              },
            ],
          },
        },
      },
      { CORP_KEY: "sk-corp", TEAM_HEADER: "blue" },
    );
    const found = reg.lookup("corp", "big");
    expect(found).toMatchObject({
      ok: true,
      apiKey: "sk-corp",
      model: {
        name: "Big",
        api: "anthropic-messages",
        contextWindow: 200000,
        maxTokens: 8192,
        reasoning: true,
        input: ["text", "image"],
        cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 },
        headers: { "x-team": "blue", "x-static": "fixed" },
      },
    });
  });

  it("apiKey: a set environment variable's value, else the literal (with a warning for a likely name)", () => {
    expect(
      parse(local({ apiKey: "MY_KEY" }), { MY_KEY: "secret" }).lookup("local-openai", "qwen2.5-coder:7b"),
    ).toMatchObject({ apiKey: "secret" });
    const unset = parse(local({ apiKey: "MY_KEY" }));
    expect(unset.lookup("local-openai", "qwen2.5-coder:7b")).toMatchObject({ apiKey: "MY_KEY" });
    expect(unset.warnings).toEqual([
      "providers.local-openai.apiKey names MY_KEY, which is not set: the text itself is used as the value",
    ]);
    expect(parse(local({ apiKey: "sk-literal" })).warnings).toEqual([]);
    // No apiKey: the provider has no key (the resolver refuses it).
    const { apiKey: _k, ...noKey } = local().providers["local-openai"];
    expect(
      parse({ providers: { "local-openai": noKey } }).lookup("local-openai", "qwen2.5-coder:7b"),
    ).toMatchObject({
      ok: true,
      apiKey: undefined,
    });
  });

  it("a file provider replaces the built-in of the same name", () => {
    const reg = parse({
      providers: {
        openai: {
          baseUrl: "http://proxy:8080/v1",
          api: "openai-completions",
          apiKey: "k",
          models: [{ id: "mine" }],
        },
      },
    });
    expect(reg.lookup("openai", "mine")).toMatchObject({
      ok: true,
      model: { baseUrl: "http://proxy:8080/v1" },
    });
    expect(reg.lookup("openai", "gpt-4o")).toMatchObject({ ok: false, reason: "unknown-model" });
    // Other built-ins stay.
    expect(reg.lookup("anthropic", "claude-sonnet-4-5")).toMatchObject({
      ok: true,
      model: { provider: "anthropic" },
    });
  });

  it("unknown provider and model are values", () => {
    const reg = parse(local());
    expect(reg.lookup("nope", "x")).toMatchObject({ ok: false, reason: "unknown-provider" });
    const miss = reg.lookup("local-openai", "other");
    expect(miss).toMatchObject({ ok: false, reason: "unknown-model" });
    expect(miss.ok === false && miss.error).toContain("qwen2.5-coder:7b");
  });

  const REFUSED: Array<[string, unknown, RegExp]> = [
    ["not a mapping", [], /expected a mapping with providers/],
    ["unknown top-level key", { providers: {}, extra: 1 }, /: extra: unknown key/],
    ["providers missing", {}, /providers: expected a mapping of providers/],
    [
      "provider name not a token",
      { providers: { "a.b": local().providers["local-openai"] } },
      /providers\.a\.b: "a\.b" is not a valid provider name/,
    ],
    [
      "reserved name",
      { providers: { scripted: local().providers["local-openai"] } },
      /providers\.scripted: "scripted" is the built-in/,
    ],
    ["unknown provider key", local({ compat: {} }), /providers\.local-openai\.compat: unknown key/],
    [
      "baseUrl not http",
      local({ baseUrl: "file:///etc" }),
      /providers\.local-openai\.baseUrl: "file:\/\/\/etc" is not an http\(s\) URL/,
    ],
    ["baseUrl not a URL", local({ baseUrl: "localhost:1234" }), /baseUrl: .* is not (a|an http\(s\)) URL/],
    [
      "baseUrl with credentials",
      local({ baseUrl: "http://u:p@h/v1" }),
      /baseUrl: credentials belong in apiKey/,
    ],
    ["baseUrl missing", local({ baseUrl: undefined }), /baseUrl: expected an http\(s\) URL/],
    ["unknown api", local({ api: "ollama" }), /api: "ollama" is not an api pi-ai knows/],
    ["no api anywhere", local({ api: undefined }), /models\[0\]\.api: no api/],
    [
      "command apiKey",
      local({ apiKey: "!op read x" }),
      /apiKey: pi's command form \(!command\) is not supported/,
    ],
    ["command header", local({ headers: { "x-k": "!cat f" } }), /headers\.x-k: pi's command form/],
    ["bad header name", local({ headers: { "x k": "v" } }), /headers: "x k" is not an HTTP header name/],
    ["empty apiKey", local({ apiKey: "" }), /apiKey: expected a non-empty string/],
    ["no models", local({ models: [] }), /models: expected at least one model/],
    ["models not a list", local({ models: {} }), /models: expected a list/],
    ["unknown model key", local({ models: [{ id: "a", compat: {} }] }), /models\[0\]\.compat: unknown key/],
    ["model id missing", local({ models: [{}] }), /models\[0\]\.id: expected a model id/],
    [
      "model id too long",
      local({ models: [{ id: "x".repeat(129) }] }),
      /models\[0\]\.id: expected a model id/,
    ],
    ["duplicate id", local({ models: [{ id: "a" }, { id: "a" }] }), /models\[1\]\.id: "a" is listed twice/],
    [
      "bad contextWindow",
      local({ models: [{ id: "a", contextWindow: 0 }] }),
      /contextWindow: expected a positive integer/,
    ],
    [
      "bad maxTokens",
      local({ models: [{ id: "a", maxTokens: 1.5 }] }),
      /maxTokens: expected a positive integer/,
    ],
    [
      "bad reasoning",
      local({ models: [{ id: "a", reasoning: "yes" }] }),
      /reasoning: expected true or false/,
    ],
    [
      "bad input",
      local({ models: [{ id: "a", input: ["audio"] }] }),
      /input\[0\]: expected "text" or "image"/,
    ],
    [
      "bad cost",
      local({ models: [{ id: "a", cost: { input: -1 } }] }),
      /cost\.input: expected a number >= 0/,
    ],
    ["unknown cost key", local({ models: [{ id: "a", cost: { per: 1 } }] }), /cost\.per: unknown key/],
  ];
  it.each(REFUSED)("refuses %s, naming the key", (_label, raw, pattern) => {
    expect(() => parse(raw)).toThrow(pattern);
    expect(() => parse(raw)).toThrow(/^PI_MODELS_JSON \(models\.json\): /);
  });
});

describe("the worker's secrets", () => {
  afterEach(() => vi.unstubAllEnvs());

  it("are every key and header value of the file, literal or from the environment, and the built-ins' keys", () => {
    vi.stubEnv("OPENAI_API_KEY", "sk-openai-from-env");
    vi.stubEnv("ANTHROPIC_OAUTH_TOKEN", "anthropic-oauth-from-env");
    vi.stubEnv("ANTHROPIC_API_KEY", "anthropic-key-from-env");
    vi.stubEnv("AWS_SECRET_ACCESS_KEY", "aws-secret-from-env");
    const provider = {
      baseUrl: "https://gw.example.com/v1",
      api: "openai-completions",
      apiKey: "GW_KEY",
      headers: { "x-team": "platform", "x-gateway-secret": "GW_SECRET" },
      models: [{ id: "m" }],
    };
    const reg = parse(
      { providers: { gw: provider, local: { ...provider, apiKey: "ollama", headers: undefined } } },
      { GW_KEY: "gw-key-value", GW_SECRET: "gw-secret-value" },
    );
    expect(reg.secrets()).toEqual(
      expect.arrayContaining([
        "gw-key-value",
        "platform",
        "gw-secret-value",
        "ollama",
        "sk-openai-from-env",
        "anthropic-oauth-from-env",
        "anthropic-key-from-env",
        "aws-secret-from-env",
      ]),
    );
    expect(builtInModels().secrets()).toEqual(
      expect.arrayContaining(["sk-openai-from-env", "anthropic-key-from-env", "aws-secret-from-env"]),
    );
    expect(builtInModels().secrets()).not.toContain("gw-key-value");
  });
});

describe("loadModelsConfig", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "models-config-"));

  it("unset: pi-ai's built-ins only", () => {
    const reg = loadModelsConfig(undefined, {});
    expect(reg.source).toBeUndefined();
    expect(reg.lookup("anthropic", "claude-sonnet-4-5")).toMatchObject({ ok: true });
    expect(builtInModels().lookup("local-openai", "x")).toMatchObject({
      ok: false,
      reason: "unknown-provider",
    });
  });

  it("reads the file; a missing or non-JSON file is refused naming it", () => {
    const file = path.join(dir, "models.json");
    writeFileSync(file, JSON.stringify(local()));
    expect(loadModelsConfig(file, {}).source).toBe(file);
    expect(() => loadModelsConfig(path.join(dir, "none.json"), {})).toThrow(/none\.json\) cannot be read/);
    const bad = path.join(dir, "bad.json");
    writeFileSync(bad, "{ providers: ");
    expect(() => loadModelsConfig(bad, {})).toThrow(/bad\.json\) is not JSON/);
  });
});

describe("resolveModel over the catalogue", () => {
  const turn = { sessionId: "s", turnId: "t" };
  const reg = parse(
    {
      providers: {
        ...local().providers,
        keyless: { baseUrl: "http://h/v1", api: "openai-completions", models: [{ id: "m" }] },
      },
    },
    {},
  );

  it("builds the file's model; the key answers for its provider only", () => {
    const r = resolveModel({ provider: "local-openai", model: "qwen2.5-coder:7b" }, turn, reg);
    expect(r).toMatchObject({
      ok: true,
      model: { baseUrl: "http://127.0.0.1:11434/v1", provider: "local-openai" },
    });
    if (!r.ok) return;
    expect(r.getApiKey?.("local-openai")).toBe("ollama");
    expect(r.getApiKey?.("openai")).toBeUndefined();
  });

  it.each([
    [
      "unknown provider",
      { provider: "nope", model: "m" },
      /^provider "nope" is not configured \(neither in the worker's PI_MODELS_JSON nor built into pi-ai\)$/,
    ],
    [
      "unknown model",
      { provider: "local-openai", model: "other" },
      /^model "other" is not one of provider local-openai's \(qwen2\.5-coder:7b\)$/,
    ],
    ["no key", { provider: "keyless", model: "m" }, /^no API key for provider keyless/],
    ["scripted without a script", { provider: "scripted", model: "x" }, /^scripted model "x" has no script/],
  ])("%s is MODEL_NOT_CONFIGURED", (_label, config, pattern) => {
    const r = resolveModel(config, turn, reg);
    expect(r).toMatchObject({ ok: false, code: "MODEL_NOT_CONFIGURED" });
    expect(r.ok === false && r.error).toMatch(pattern);
  });

  it("built-ins without PI_MODELS_JSON say so", () => {
    const r = resolveModel({ provider: "local-openai", model: "m" }, turn, builtInModels());
    expect(r.ok === false && r.error).toMatch(/\(the worker has no PI_MODELS_JSON; not built into pi-ai\)$/);
  });
});
