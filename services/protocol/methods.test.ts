// The METHODS table drives the typed clients: a known method's params are checked and its result typed,
// an unknown method or wrong params do not compile (the @ts-expect-error lines fail typecheck otherwise).
import type { NatsConnection } from "@nats-io/nats-core";
import { describe, expect, expectTypeOf, it } from "vitest";
import { encodeJson } from "./envelope.ts";
import { errorCodeInfo, type ErrorCode } from "./error-codes.ts";
import { AGENT_METHODS, CLIENT_METHODS, METHODS, type ResultOf } from "./methods.ts";
import { agentClient, rpcClient } from "./rpc-client.ts";
import { SERVICE_ERROR_STATUS, serviceErrorStatus } from "./service-errors.ts";

/** A connection double that records the subject and body and answers with `result`. */
function fakeNc(result: unknown) {
  const sent: Array<{ subject: string; body: string }> = [];
  const nc = {
    async request(subject: string, data: Uint8Array) {
      sent.push({ subject, body: new TextDecoder().decode(data) });
      return { data: encodeJson({ result }) };
    },
    publish(subject: string, data: Uint8Array) {
      sent.push({ subject, body: new TextDecoder().decode(data) });
    },
  } as unknown as NatsConnection;
  return { nc, sent };
}

describe("typed clients", () => {
  it("call() sends the method's params on its subject and returns its result type", async () => {
    const { nc, sent } = fakeNc({ turnId: "t1" });
    const client = rpcClient({ nc, prefix: "pi", principal: "alice" });
    const r = await client.call("session.prompt", { sessionId: "s1", text: "hi" });
    expectTypeOf(r).toEqualTypeOf<ResultOf<"session.prompt">>();
    expectTypeOf(r.turnId).toBeString();
    expect(r).toEqual({ turnId: "t1" });
    expect(sent).toEqual([
      { subject: "pi.rpc.alice.session.prompt", body: '{"sessionId":"s1","text":"hi"}' },
    ]);
  });

  it("params may be left out only where the method takes an empty object", async () => {
    const { nc, sent } = fakeNc({ sessions: [] });
    const client = rpcClient({ nc, prefix: "pi", principal: "alice" });
    await client.call("session.list");
    expect(sent[0]?.body).toBe("{}");
    // @ts-expect-error session.get needs its sessionId
    await client.call("session.get");
  });

  it("an unknown method or wrong params do not compile; raw() stays loose for refusal tests", async () => {
    const { nc, sent } = fakeNc(null);
    const client = rpcClient({ nc, prefix: "pi", principal: "alice" });
    // @ts-expect-error no such client method
    await client.call("session.explode", {});
    // @ts-expect-error a worker method is not a client method
    await client.call("claim", { turnId: "t1", workerId: "w1" });
    // @ts-expect-error text must be a string
    await client.call("session.prompt", { sessionId: "s1", text: 42 });
    // @ts-expect-error an extra field
    await client.call("session.get", { sessionId: "s1", extra: true });
    await client.raw("session.explode", { anything: 1 });
    expect(sent.map((s) => s.subject)).toContain("pi.rpc.alice.session.explode");
  });

  it("the agent client is typed the same way and says hello through the contract's encoder", async () => {
    const { nc, sent } = fakeNc({ ok: true });
    const bus = agentClient({ nc, prefix: "pi" });
    const client = bus.to("h1");
    const r = await client.call("heartbeat", { turnId: "t1", token: "k" });
    expectTypeOf(r).toEqualTypeOf<ResultOf<"heartbeat">>();
    // A worker's calls go to the host that owns the turn, on that host's own subjects.
    expect(sent.at(-1)?.subject).toBe("pi.agent.host.h1.heartbeat");
    // @ts-expect-error a client method is not an agent method
    await client.call("session.get", { sessionId: "s1" });
    bus.hello("w1");
    expect(sent.at(-1)).toEqual({ subject: "pi.agent.hello", body: '{"workerId":"w1","protocolVersion":1}' });
    bus.goodbye("w1");
    expect(sent.at(-1)).toEqual({ subject: "pi.agent.goodbye.w1", body: '{"workerId":"w1"}' });
  });
});

describe("METHODS", () => {
  it("derives the client and agent-worker method lists", () => {
    expect([...CLIENT_METHODS, ...AGENT_METHODS].sort()).toEqual(Object.keys(METHODS).sort());
    expect(AGENT_METHODS).toEqual([
      "claim",
      "context",
      "append",
      "heartbeat",
      "tools.execute",
      "turn.end",
      "delta",
      "body.part",
    ]);
    for (const m of CLIENT_METHODS) expect(METHODS[m].caller).toBe("person");
  });

  it("every params schema is a closed object, so unknown fields are INVALID_PARAMS", () => {
    for (const [name, spec] of Object.entries(METHODS)) {
      expect(spec.params.type, name).toBe("object");
      expect((spec.params as { additionalProperties?: unknown }).additionalProperties, name).toBe(false);
    }
  });

  it("worker methods but claim are token-gated", () => {
    for (const m of AGENT_METHODS) expect(METHODS[m].gate).toBe(m === "claim" ? "none" : "token");
  });
});

describe("service error status", () => {
  it("every retriable code but INTERNAL is 503, INTERNAL 500, and every 503 is retriable", () => {
    for (const code of Object.keys(errorCodeInfo) as ErrorCode[]) {
      const status = serviceErrorStatus(code);
      if (code === "INTERNAL") expect(status).toBe(500);
      else expect(status === 503, code).toBe(errorCodeInfo[code].retriable);
    }
  });

  it("maps each code at most once", () => {
    const listed = Object.values(SERVICE_ERROR_STATUS).flat();
    expect(new Set(listed).size).toBe(listed.length);
    expect(serviceErrorStatus("INVALID_PARAMS")).toBe(400);
    expect(serviceErrorStatus("FORBIDDEN")).toBe(403);
    expect(serviceErrorStatus("PLAN_NOT_FOUND")).toBe(404);
    expect(serviceErrorStatus("PLAN_APPROVAL_STALE")).toBe(409);
  });
});
