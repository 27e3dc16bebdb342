import { describe, expect, it } from "vitest";
import { AppError } from "../protocol/app-error.ts";
import { createLogger, errorFields, withRequestId } from "./log.ts";
import { REDACTED } from "./secret-redaction.ts";

const KEY = "sk-proj-A1b2C3d4E5f6G7h8I9j0K1l2M3n4";
const HEADER = "team-gateway-0451";

function capture(secrets?: string[]) {
  const lines: string[] = [];
  const log = createLogger("agent", (l) => lines.push(l), secrets ? { secrets } : {});
  return { log, lines, parsed: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe("log lines carry no secret", () => {
  it("removes credential shapes and the configured secrets at any depth, keeping the line's shape", () => {
    const { log, lines, parsed } = capture([HEADER, "ollama"]);
    withRequestId("rid_test", () =>
      log.warn("turn.ended", {
        turnId: "turn_1",
        error: `401 Incorrect API key provided: ${KEY}; header ${HEADER}; ollama`,
        nested: { list: [`Bearer ${HEADER}x9`, { apiKey: "3f9a1c0e7b2d4f6a8c1e" }] },
        count: 3,
      }),
    );
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/\n$/);
    expect(lines[0]).not.toContain(KEY);
    expect(lines[0]).not.toContain(HEADER);
    const [line] = parsed();
    expect(line).toMatchObject({
      level: "warn",
      service: "agent",
      event: "turn.ended",
      requestId: "rid_test",
      turnId: "turn_1",
      // "ollama" is under the floor: it is no secret worth the name and stays.
      error: `401 Incorrect API key provided: ${REDACTED}; header ${REDACTED}; ollama`,
      nested: { list: [`Bearer ${REDACTED}`, { apiKey: REDACTED }] },
      count: 3,
    });
    expect(Object.keys(line!)).toEqual([
      "level",
      "t",
      "service",
      "event",
      "requestId",
      "turnId",
      "error",
      "nested",
      "count",
    ]);
  });

  it("a logger without configured secrets still removes the shapes, from error stacks too", () => {
    const { log, parsed } = capture();
    const err = new Error(`provider said: Bearer ${KEY}`);
    log.error("turn.crashed", errorFields(err));
    const [line] = parsed();
    expect(line!.error).toBe(`provider said: Bearer ${REDACTED}`);
    expect(String(line!.stack)).not.toContain(KEY);
    expect(String(line!.stack)).toContain("log.test.ts");
  });

  it("an error keeps its stable code, its details and its cause", () => {
    const { log, parsed } = capture();
    const cause = new Error(`connect ECONNREFUSED, token ${KEY}`);
    const err = new AppError("DATABASE_UNAVAILABLE", "the database is unreachable", {
      cause,
      details: { host: "127.0.0.1" },
    });
    log.error("host.request_failed", errorFields(err));
    const [line] = parsed();
    expect(line).toMatchObject({
      event: "host.request_failed",
      error: "the database is unreachable",
      code: "DATABASE_UNAVAILABLE",
      details: { host: "127.0.0.1" },
      cause: { error: `connect ECONNREFUSED, token ${REDACTED}` },
    });
  });

  it("ordinary fields are written as they were", () => {
    const { log, parsed } = capture([HEADER]);
    const fields = {
      workerId: "worker-1",
      file: "/etc/pi-host/models.json",
      providers: ["local-openai"],
      n: 0,
    };
    log.info("worker.models", fields);
    expect(parsed()[0]).toMatchObject({ event: "worker.models", ...fields });
  });
});
