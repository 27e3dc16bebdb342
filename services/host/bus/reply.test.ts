// The host's one reply function: values, Result values and refusals, AppErrors and bugs become the
// documented bodies, every error with the NATS service error headers, counted per endpoint.
import { ServiceErrorCodeHeader, ServiceErrorHeader, type ServiceMsg } from "@nats-io/services";
import { describe, expect, it } from "vitest";
import { AppError } from "../../protocol/app-error.ts";
import { decodeJson } from "../../protocol/envelope.ts";
import type { Logger } from "../../runtime/log.ts";
import { ok, refuse } from "../../protocol/result.ts";
import { createReplier } from "./reply.ts";

interface Sent {
  body: unknown;
  status?: number;
  description?: string;
}

function fakeMsg(sent: Sent[]): ServiceMsg {
  return {
    subject: "pi.rpc.alice.x",
    respond(data: Uint8Array) {
      sent.push({ body: decodeJson(data) });
      return true;
    },
    respondError(status: number, description: string, data: Uint8Array) {
      sent.push({ body: decodeJson(data), status, description });
      return true;
    },
  } as unknown as ServiceMsg;
}

const logged: string[] = [];
const log: Logger = {
  info: () => {},
  warn: (event) => void logged.push(event),
  error: (event) => void logged.push(event),
} as Logger;

async function replyWith(run: () => Promise<unknown>, endpoint = "pi.rpc.>") {
  const replier = createReplier(log);
  const sent: Sent[] = [];
  replier.reply(fakeMsg(sent), endpoint, run);
  await new Promise((r) => setTimeout(r, 0));
  return { sent, replier };
}

describe("reply", () => {
  it("a value is {result}, an ok Result its value, without error headers", async () => {
    expect((await replyWith(async () => ({ turnId: "t1" }))).sent).toEqual([
      { body: { result: { turnId: "t1" } } },
    ]);
    expect((await replyWith(async () => ok({ a: 1 }))).sent).toEqual([{ body: { result: { a: 1 } } }]);
    expect((await replyWith(async () => undefined)).sent).toEqual([{ body: { result: null } }]);
    // A value that merely has an `ok` field is not a Result.
    expect((await replyWith(async () => ({ ok: true, leaseMs: 5 }))).sent[0]?.body).toEqual({
      result: { ok: true, leaseMs: 5 },
    });
  });

  it("an AppError and a Result refusal are the same error body with both headers", async () => {
    const thrown = await replyWith(async () => {
      throw new AppError("PLAN_NOT_FOUND", "no plan p1");
    });
    const refused = await replyWith(async () => refuse("PLAN_NOT_FOUND", "no plan p1"));
    const expected = {
      body: { error: { code: "PLAN_NOT_FOUND", message: "no plan p1", retriable: false } },
      status: 404,
      description: "no plan p1",
    };
    expect(thrown.sent).toEqual([expected]);
    expect(refused.sent).toEqual([expected]);
  });

  it("a bug is INTERNAL (500), logged; a multi-line message is one header line", async () => {
    logged.length = 0;
    const bug = await replyWith(async () => {
      throw new TypeError("boom");
    });
    expect(bug.sent[0]).toMatchObject({
      status: 500,
      body: { error: { code: "INTERNAL", retriable: true } },
    });
    expect(logged).toEqual(["host.bug", "host.request_failed"]);
    const lines = await replyWith(async () => {
      throw new AppError("INVALID_PARAMS", "a\r\nb\nc");
    });
    expect(lines.sent[0]).toMatchObject({ status: 400, description: "a b c" });
    expect(ServiceErrorHeader).toBe("Nats-Service-Error");
    expect(ServiceErrorCodeHeader).toBe("Nats-Service-Error-Code");
  });

  it("counts error replies per endpoint for the stats handler", async () => {
    const replier = createReplier(log);
    const sent: Sent[] = [];
    const fail = (code: "FORBIDDEN" | "INVALID_PARAMS") => async () => {
      throw new AppError(code);
    };
    replier.reply(fakeMsg(sent), "pi.rpc.>", fail("FORBIDDEN"));
    replier.reply(fakeMsg(sent), "pi.rpc.>", fail("FORBIDDEN"));
    replier.reply(fakeMsg(sent), "pi.rpc.>", fail("INVALID_PARAMS"));
    replier.reply(fakeMsg(sent), "pi.rpc.>", async () => 1);
    await new Promise((r) => setTimeout(r, 0));
    expect(await replier.statsHandler({ subject: "pi.rpc.>" })).toEqual({
      errors: 3,
      codes: { FORBIDDEN: 2, INVALID_PARAMS: 1 },
    });
    expect(await replier.statsHandler({ subject: "pi.agent.host.h1.claim" })).toEqual({
      errors: 0,
      codes: {},
    });
  });
});
