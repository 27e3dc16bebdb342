// Every error reply of the host carries the NATS service error headers (Nats-Service-Error and
// Nats-Service-Error-Code, docs/protocol.md "Service error headers") next to its unchanged JSON
// body, and the service's stats data counts the errors per endpoint. Plain nc.request, no client.
import type { Msg } from "@nats-io/nats-core";
import { ServiceErrorCodeHeader, ServiceErrorHeader, Svcm } from "@nats-io/services";
import { describe, expect, it } from "vitest";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import { agentSubject, HOST_SERVICE_NAME, rpcSubject } from "../services/protocol/subjects.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("svcerr", { host: true });
const te = new TextEncoder();

function send(subject: string, body: Uint8Array): Promise<Msg> {
  return stack.nc.request(subject, body, { timeout: 10_000 });
}

function expectErrorReply(msg: Msg, code: string, status: number) {
  const body = decodeJson(msg.data) as { error: { code: string; message: string; retriable: boolean } };
  expect(Object.keys(body)).toEqual(["error"]);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.retriable).toBe("boolean");
  expect(msg.headers?.get(ServiceErrorCodeHeader)).toBe(String(status));
  expect(msg.headers?.get(ServiceErrorHeader)).toBe(body.error.message.replace(/[\r\n]+/g, " "));
}

describe("service error headers", () => {
  const rpc = (method: string) => rpcSubject(stack.env.prefix, "alice", method);
  const bad: Array<[string, () => string, Uint8Array, string, number]> = [
    ["an unknown method", () => rpc("no.such"), encodeJson({}), "UNKNOWN_METHOD", 404],
    ["a worker method on an rpc subject", () => rpc("claim"), encodeJson({}), "UNKNOWN_METHOD", 404],
    ["a body that is not JSON", () => rpc("host.hello"), te.encode("{not json"), "INVALID_PARAMS", 400],
    ["params that miss a field", () => rpc("session.get"), encodeJson({}), "INVALID_PARAMS", 400],
    [
      "another protocol version",
      () => rpc("host.hello"),
      encodeJson({ protocolVersion: 999 }),
      "PROTOCOL_MISMATCH",
      400,
    ],
    [
      "a session that does not exist",
      () => rpc("session.get"),
      encodeJson({ sessionId: "nope" }),
      "SESSION_NOT_FOUND",
      404,
    ],
    [
      "a worker call without a valid token",
      () => agentSubject(stack.env.prefix, "heartbeat"),
      encodeJson({ turnId: "t1", token: "forged" }),
      "TURN_TOKEN_INVALID",
      403,
    ],
  ];

  it.each(bad)("%s: the error body and both headers", async (_what, subject, body, code, status) => {
    expectErrorReply(await send(subject(), body), code, status);
  });

  it("a result carries no service error headers", async () => {
    const msg = await send(rpc("host.hello"), encodeJson({ protocolVersion: 1 }));
    expect(decodeJson(msg.data)).toMatchObject({ result: { protocolVersion: 1 } });
    expect(msg.headers?.get(ServiceErrorCodeHeader) ?? "").toBe("");
  });

  it("the service's stats data counts the error replies per endpoint", async () => {
    const client = new Svcm(stack.nc).client();
    const all = [];
    for await (const s of await client.stats(HOST_SERVICE_NAME)) all.push(s);
    const mine = all.find((s) => s.metadata?.prefix === stack.env.prefix);
    expect(mine).toBeDefined();
    const bySubject = new Map((mine?.endpoints ?? []).map((e) => [e.subject, e.data]));
    expect(bySubject.get(`${stack.env.prefix}.rpc.>`)).toEqual({
      errors: 6,
      codes: { UNKNOWN_METHOD: 2, INVALID_PARAMS: 2, PROTOCOL_MISMATCH: 1, SESSION_NOT_FOUND: 1 },
    });
    expect(bySubject.get(agentSubject(stack.env.prefix, "heartbeat"))).toEqual({
      errors: 1,
      codes: { TURN_TOKEN_INVALID: 1 },
    });
    expect(bySubject.get(agentSubject(stack.env.prefix, "claim"))).toEqual({ errors: 0, codes: {} });
  });
});
