// The console's port, origins and WebSocket URL as `npm start` chooses them, and the spawned NATS's
// configuration (WebSocket on loopback with exactly the console's origins, or none at all).
import { describe, expect, it } from "vitest";
import { createLogger } from "../runtime/log.ts";
import { spawnedNatsConfig } from "./nats.ts";
import { noop } from "./resolved-service.ts";
import { chooseWebPort, consoleSocket, DEFAULT_WEB_PORT, webOrigins } from "./web-console.ts";

function captureLog() {
  const events: Array<Record<string, unknown>> = [];
  const log = createLogger("test", (line) => events.push(JSON.parse(line)));
  return { log, events };
}

describe("chooseWebPort", () => {
  it("takes PI_WEB_PORT exactly, else 5173 when free, else another port", async () => {
    expect(await chooseWebPort({ PI_WEB_PORT: "8123" }, async () => false)).toBe(8123);
    expect(await chooseWebPort({}, async () => true)).toBe(DEFAULT_WEB_PORT);
    const other = await chooseWebPort({}, async () => false);
    expect(other).not.toBe(DEFAULT_WEB_PORT);
    expect(other).toBeGreaterThan(0);
  });

  it.each(["0", "65536", "80a", "-1", "5173.5"])("refuses PI_WEB_PORT=%s", async (v) => {
    await expect(chooseWebPort({ PI_WEB_PORT: v })).rejects.toThrow(/PI_WEB_PORT must be a TCP port/);
  });
});

describe("webOrigins", () => {
  it("names both loopback spellings of the console's origin", () => {
    expect(webOrigins(5173)).toEqual(["http://127.0.0.1:5173", "http://localhost:5173"]);
  });
});

describe("consoleSocket", () => {
  const spawned = {
    url: "nats://127.0.0.1:4300",
    source: "spawned" as const,
    stop: noop,
    wsUrl: "ws://127.0.0.1:4301",
  };
  const probed = { url: "nats://127.0.0.1:4222", source: "probe" as const, stop: noop };
  const fromEnv = { url: "nats://me:secret@nats.example:4222", source: "env" as const, stop: noop };

  it("uses the spawned server's own WebSocket, and says when PI_WEB_WS_URL is ignored", () => {
    const { log, events } = captureLog();
    expect(consoleSocket({ nats: spawned, envWsUrl: undefined, webPort: 5173, log })).toEqual({
      on: true,
      wsUrl: "ws://127.0.0.1:4301",
      from: "spawned",
    });
    expect(events).toEqual([]);
    consoleSocket({ nats: spawned, envWsUrl: "ws://elsewhere:1", webPort: 5173, log });
    expect(events[0]).toMatchObject({ event: "infra.web_ws_url_ignored", level: "warn" });
  });

  it("uses PI_WEB_WS_URL for a NATS from NATS_URL or the probe", () => {
    const { log, events } = captureLog();
    for (const nats of [probed, fromEnv]) {
      expect(consoleSocket({ nats, envWsUrl: "wss://nats.example:443", webPort: 5173, log })).toEqual({
        on: true,
        wsUrl: "wss://nats.example:443",
        from: "PI_WEB_WS_URL",
      });
    }
    expect(events).toEqual([]);
  });

  it("without PI_WEB_WS_URL turns the console off with one line naming the cause and the fix", () => {
    const { log, events } = captureLog();
    expect(consoleSocket({ nats: fromEnv, envWsUrl: "  ", webPort: 5174, log })).toEqual({ on: false });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      event: "infra.web_off",
      level: "warn",
      console: "off",
      natsSource: "env",
    });
    expect(String(events[0]?.reason)).toContain("NATS_URL");
    expect(String(events[0]?.fix)).toContain("PI_WEB_WS_URL");
    expect(String(events[0]?.fix)).toContain("http://127.0.0.1:5174 and http://localhost:5174");
    expect(JSON.stringify(events)).not.toContain("secret");
  });

  it.each(["http://127.0.0.1:8080", "127.0.0.1:8080", "not a url"])("refuses PI_WEB_WS_URL=%s", (v) => {
    const { log } = captureLog();
    expect(() => consoleSocket({ nats: probed, envWsUrl: v, webPort: 5173, log })).toThrow(
      /ws:\/\/ or wss:\/\//,
    );
  });
});

describe("spawnedNatsConfig", () => {
  it("listens on loopback, and has a loopback WebSocket only with allowed origins", () => {
    const plain = spawnedNatsConfig({ port: 4300, storeDir: "/d/nats" });
    expect(plain).toContain('listen: "127.0.0.1:4300"');
    expect(plain).toContain('jetstream { store_dir: "/d/nats" }');
    expect(plain).not.toContain("websocket");
    expect(
      spawnedNatsConfig({ port: 4300, storeDir: "/d", ws: { port: 4301, allowedOrigins: [] } }),
    ).not.toContain("websocket");
    const ws = spawnedNatsConfig({
      port: 4300,
      storeDir: "/d",
      ws: { port: 4301, allowedOrigins: webOrigins(5173) },
    });
    expect(ws).toContain(
      [
        "websocket {",
        '  listen: "127.0.0.1:4301"',
        "  no_tls: true",
        '  allowed_origins: ["http://127.0.0.1:5173", "http://localhost:5173"]',
        "}",
      ].join("\n"),
    );
  });
});
