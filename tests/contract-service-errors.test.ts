// Every error reply of the host carries the NATS service error headers (Nats-Service-Error and
// Nats-Service-Error-Code, docs/protocol.md "Service error headers") next to its unchanged JSON
// body, and the service's stats data counts the errors per endpoint. Plain nc.request, no client.
import type { Msg } from "@nats-io/nats-core";
import { ServiceErrorCodeHeader, ServiceErrorHeader, Svcm } from "@nats-io/services";
import { describe, expect, it } from "vitest";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import {
  HOST_SERVICE_NAME,
  hostForwardSubject,
  rpcSubject,
  workerHostSubject,
} from "../services/protocol/subjects.ts";
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
      () => workerHostSubject(stack.env.prefix, stack.agentClient.host, "heartbeat"),
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
    expect(bySubject.get(workerHostSubject(stack.env.prefix, stack.agentClient.host, "heartbeat"))).toEqual({
      errors: 1,
      codes: { TURN_TOKEN_INVALID: 1 },
    });
    expect(bySubject.get(workerHostSubject(stack.env.prefix, stack.agentClient.host, "claim"))).toEqual({
      errors: 0,
      codes: {},
    });
  });

  it("a $SRV request whose reply subject is no inbox gets no answer and is recorded (no host-to-host publish)", async () => {
    // The finding: a $SRV request with reply `<prefix>.host.fwd.<host>` made the serving user publish
    // the answer there (the host logged host.forward_malformed). $SRV gets the reply rule too.
    const client = new Svcm(stack.nc).client();
    const infos = [];
    for await (const s of await client.info(HOST_SERVICE_NAME)) infos.push(s);
    const mine = infos.find((s) => s.metadata?.prefix === stack.env.prefix);
    expect(mine).toBeDefined();
    const target = hostForwardSubject(stack.env.prefix, stack.agentClient.host);
    const seen: string[] = [];
    const tap = stack.nc.subscribe(target, {
      callback: (_e, m) => {
        seen.push(m.subject);
      },
    });
    await stack.nc.flush();
    for (const verb of ["PING", "INFO", "STATS"])
      stack.nc.publish(`$SRV.${verb}.${HOST_SERVICE_NAME}.${mine!.id}`, new Uint8Array(0), { reply: target });
    await stack.nc.flush();
    await expect
      .poll(
        () =>
          stack.host!.lines.filter((l) => l.includes('"event":"host.reply_refused"') && l.includes("$SRV."))
            .length,
      )
      .toBe(3);
    await stack.nc.flush();
    expect(seen).toEqual([]);
    expect(stack.host!.lines.some((l) => l.includes('"event":"host.forward_malformed"'))).toBe(false);
    tap.unsubscribe();
    // An inbox still gets its answer.
    const ping = await stack.nc.request(`$SRV.PING.${HOST_SERVICE_NAME}.${mine!.id}`, new Uint8Array(0), {
      timeout: 5_000,
    });
    expect(decodeJson(ping.data)).toMatchObject({ name: HOST_SERVICE_NAME, id: mine!.id });
  });
});
