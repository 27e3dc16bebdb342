import { describe, expect, it } from "vitest";
import { contentSecurityPolicy, readWebSettings } from "./web-settings.ts";

describe("readWebSettings", () => {
  it("defaults: ws://127.0.0.1:8081 and prefix pi", () => {
    expect(readWebSettings({})).toEqual({ wsUrl: "ws://127.0.0.1:8081", prefix: "pi" });
  });
  it("takes PI_WEB_WS_URL and PI_WEB_PREFIX", () => {
    expect(
      readWebSettings({ PI_WEB_WS_URL: "wss://nats.example.com:8443", PI_WEB_PREFIX: "team-a" }),
    ).toEqual({
      wsUrl: "wss://nats.example.com:8443",
      prefix: "team-a",
    });
  });
  it.each([
    ["http://127.0.0.1:8081", /ws:\/\/ or wss:\/\//],
    ["not a url", /ws:\/\/ or wss:\/\//],
    ["ws://u:p@127.0.0.1:1", /credentials/],
    ["ws://127.0.0.1:1/?x=1", /query/],
    ["ws://127.0.0.1:1/;script-src", /semicolons/],
    ["ws://127.0.0.1:1 https://evil.example", /ws:\/\/ or wss:\/\/|spaces/],
  ])("refuses PI_WEB_WS_URL=%s (it would widen or break the policy)", (url, message) => {
    expect(() => readWebSettings({ PI_WEB_WS_URL: url })).toThrow(message);
  });
  it("refuses a prefix that is not one subject token", () => {
    expect(() => readWebSettings({ PI_WEB_PREFIX: "pi.evt" })).toThrow(/PI_WEB_PREFIX/);
  });
});

describe("contentSecurityPolicy", () => {
  it("self only, data: images, connections only to the WebSocket, no frames, objects, base or forms", () => {
    expect(contentSecurityPolicy("ws://127.0.0.1:1")).toBe(
      "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src ws://127.0.0.1:1; frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'",
    );
  });
});
