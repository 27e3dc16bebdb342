import { describe, expect, it } from "vitest";
import { principalFromUserName, readCliConfig } from "./cli-config.ts";
import { UsageError } from "./cli-error.ts";

describe("principalFromUserName", () => {
  it.each([
    ["alice", "alice"],
    ["Bob.Smith", "BobSmith"],
    ["j.doe@example.com", "jdoeexamplecom"],
    ["under_score-dash", "under_score-dash"],
    ["...", "dev"],
    ["", "dev"],
    [undefined, "dev"],
    ["x".repeat(80), "x".repeat(64)],
  ])("%s -> %s", (input, expected) => {
    expect(principalFromUserName(input)).toBe(expected);
  });
});

describe("readCliConfig", () => {
  it("uses the defaults and the OS user", () => {
    expect(readCliConfig({}, "carol")).toEqual({
      natsUrl: "nats://127.0.0.1:4222",
      prefix: "pi",
      principal: "carol",
      natsUser: undefined,
      natsPassword: undefined,
    });
  });

  it("takes every variable from the environment", () => {
    const env = {
      NATS_URL: "nats://example:4333",
      PI_PREFIX: "t1",
      PI_PRINCIPAL: "dave",
      NATS_USER: "dave",
      NATS_PASSWORD: "s3cret",
    };
    expect(readCliConfig(env, "ignored")).toEqual({
      natsUrl: "nats://example:4333",
      prefix: "t1",
      principal: "dave",
      natsUser: "dave",
      natsPassword: "s3cret",
    });
  });

  it("with NATS credentials the principal is the NATS user; another PI_PRINCIPAL is refused", () => {
    expect(readCliConfig({ NATS_USER: "erin", NATS_PASSWORD: "p" }, "osuser").principal).toBe("erin");
    expect(() => readCliConfig({ NATS_USER: "erin", PI_PRINCIPAL: "frank" }, "u")).toThrow(
      /differs from NATS_USER/,
    );
  });

  it.each([{ PI_PREFIX: "a.b" }, { PI_PREFIX: "p>" }, { PI_PRINCIPAL: "a.b" }, { PI_PRINCIPAL: "*" }])(
    "refuses a prefix or principal that is not one subject token: %o",
    (env) => {
      expect(() => readCliConfig(env, "u")).toThrow(UsageError);
    },
  );
});
