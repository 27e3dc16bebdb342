import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { readAgentConfig } from "./agent-config.ts";

describe("readAgentConfig", () => {
  it("refuses to start without NATS credentials or dev mode", () => {
    expect(() => readAgentConfig({})).toThrow(/PI_DEV_MODE=1/);
    expect(() => readAgentConfig({ PI_DEV_MODE: "0" })).toThrow();
  });

  it("applies the defaults in dev mode", () => {
    const c = readAgentConfig({ PI_DEV_MODE: "1" });
    expect(c).toMatchObject({
      devMode: true,
      natsUrl: "nats://127.0.0.1:4222",
      prefix: "pi",
      concurrency: 4,
      scriptedCallLog: undefined,
    });
    expect(c.workerId).toMatch(/^worker-[0-9a-f]{12}$/);
  });

  it("reads credentials and overrides", () => {
    const c = readAgentConfig({
      NATS_USER: "w",
      NATS_PASSWORD: "p",
      NATS_URL: "nats://h:1",
      PI_PREFIX: "t1",
      PI_WORKER_CONCURRENCY: "2",
      PI_SCRIPTED_CALL_LOG: "/tmp/x.jsonl",
    });
    expect(c).toMatchObject({
      devMode: false,
      natsUser: "w",
      natsPassword: "p",
      natsUrl: "nats://h:1",
      prefix: "t1",
      workerId: "w",
      concurrency: 2,
      scriptedCallLog: "/tmp/x.jsonl",
    });
  });

  it("outside development mode the worker id is its NATS user; another id is refused", () => {
    expect(readAgentConfig({ NATS_USER: "w-2", NATS_PASSWORD: "p", PI_WORKER_ID: "w-2" }).workerId).toBe(
      "w-2",
    );
    expect(() => readAgentConfig({ NATS_USER: "w-2", NATS_PASSWORD: "p", PI_WORKER_ID: "w-1" })).toThrow(
      /must be the worker's NATS user/,
    );
    // Development mode: any id (the host also answers the shared inbox there).
    expect(readAgentConfig({ PI_DEV_MODE: "1", NATS_USER: "w", PI_WORKER_ID: "w-1" }).workerId).toBe("w-1");
  });

  it("refuses malformed values", () => {
    expect(() => readAgentConfig({ PI_DEV_MODE: "1", PI_WORKER_CONCURRENCY: "0" })).toThrow();
    expect(() => readAgentConfig({ PI_DEV_MODE: "1", PI_PREFIX: "a.b" })).toThrow();
    expect(() => readAgentConfig({ PI_DEV_MODE: "1", PI_WORKER_ID: "has space" })).toThrow();
  });

  it("reads PI_MODELS_JSON (unset: built-ins only); a bad file refuses the start naming the key", () => {
    expect(readAgentConfig({ PI_DEV_MODE: "1" }).models.source).toBeUndefined();
    const dir = mkdtempSync(path.join(os.tmpdir(), "agent-config-"));
    const file = path.join(dir, "models.json");
    const provider = { baseUrl: "http://127.0.0.1:1/v1", api: "openai-completions", apiKey: "LOCAL_KEY" };
    writeFileSync(file, JSON.stringify({ providers: { local: { ...provider, models: [{ id: "m" }] } } }));
    const c = readAgentConfig({ PI_DEV_MODE: "1", PI_MODELS_JSON: file, LOCAL_KEY: "k" });
    expect(c.models).toMatchObject({ source: file, fileProviders: ["local"], warnings: [] });
    expect(c.models.lookup("local", "m")).toMatchObject({ ok: true, apiKey: "k" });
    writeFileSync(
      file,
      JSON.stringify({ providers: { local: { ...provider, models: [{ id: "m", extra: 1 }] } } }),
    );
    expect(() => readAgentConfig({ PI_DEV_MODE: "1", PI_MODELS_JSON: file })).toThrow(
      /providers\.local\.models\[0\]\.extra: unknown key/,
    );
  });
});
