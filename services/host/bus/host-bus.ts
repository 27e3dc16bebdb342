// Registers the host as a NATS micro service (discoverable with standard tooling) and routes client
// and agent-worker requests to their handlers. Errors become wire replies here and nowhere else.
import type { NatsConnection } from "@nats-io/nats-core";
import { type Service, type ServiceMsg, Svcm } from "@nats-io/services";
import { AppError } from "../../protocol/app-error.ts";
import { decodeJson, errorReply, okReply } from "../../protocol/envelope.ts";
import { errorFields, type Logger } from "../../protocol/log.ts";
import {
  AGENT_METHODS,
  agentSubject,
  HOST_SERVICE_NAME,
  parseRpcSubject,
  rpcWildcard,
  SUBJECT_TOKEN,
  testSubject,
} from "../../protocol/subjects.ts";
import type { AgentHandler } from "./agent-api.ts";
import type { ClientHandler } from "./client-api.ts";
import { fencedAppError } from "../store/db.ts";

export async function startHostBus(deps: {
  nc: NatsConnection;
  prefix: string;
  hostId: string;
  version: string;
  log: Logger;
  client: Record<string, ClientHandler>;
  agent: Record<string, AgentHandler>;
  test: Record<string, AgentHandler> | null;
  onWorkerHello: () => void;
}): Promise<Service> {
  const { nc, prefix, log } = deps;
  const respond = (msg: ServiceMsg, run: () => Promise<unknown>) => {
    run().then(
      (result) => msg.respond(okReply(result ?? null)),
      (raw) => {
        // A write the fence refused: this incarnation was superseded (db.ts); retriable elsewhere.
        const err = fencedAppError(raw) ?? raw;
        const code = err instanceof AppError ? err.code : "INTERNAL";
        msg.respond(
          errorReply(err, (bug) => log.error("host.bug", { subject: msg.subject, ...errorFields(bug) })),
          {
            headers: undefined,
          },
        );
        if (code === "INTERNAL")
          log.warn("host.request_failed", { subject: msg.subject, ...errorFields(err) });
      },
    );
  };

  const service = await new Svcm(nc).add({
    name: HOST_SERVICE_NAME,
    version: deps.version,
    description: "pi-host authority: sessions, tool policy, plan approvals",
    metadata: { hostId: deps.hostId, prefix },
  });

  service.addEndpoint("rpc", {
    subject: rpcWildcard(prefix),
    handler: (err, msg) => {
      if (err) return log.error("host.rpc_subscription", errorFields(err));
      respond(msg, async () => {
        const parsed = parseRpcSubject(prefix, msg.subject);
        if (!parsed || !SUBJECT_TOKEN.test(parsed.principal))
          throw new AppError("INVALID_PARAMS", "malformed subject");
        const handler = Object.hasOwn(deps.client, parsed.method) ? deps.client[parsed.method] : undefined;
        if (!handler) throw new AppError("UNKNOWN_METHOD", `no method ${parsed.method}`);
        return handler(parsed.principal, decodeJson(msg.data));
      });
    },
  });

  for (const method of AGENT_METHODS) {
    const handler = deps.agent[method];
    if (!handler) continue;
    service.addEndpoint(`agent-${method.replace(".", "-")}`, {
      subject: agentSubject(prefix, method),
      handler: (err, msg) => {
        if (err) return log.error("host.agent_subscription", errorFields(err));
        respond(msg, async () => handler(decodeJson(msg.data)));
      },
    });
  }

  service.addEndpoint("test", {
    subject: testSubject(prefix, ">"),
    handler: (err, msg) => {
      if (err) return;
      respond(msg, async () => {
        if (!deps.test) throw new AppError("TEST_HOOKS_DISABLED");
        const name = msg.subject.slice(testSubject(prefix, "").length);
        const handler = Object.hasOwn(deps.test, name) ? deps.test[name] : undefined;
        if (!handler) throw new AppError("UNKNOWN_METHOD", `no test hook ${name}`);
        return handler(decodeJson(msg.data));
      });
    },
  });

  // Workers announce themselves; waiting offers are re-published at once.
  nc.subscribe(agentSubject(prefix, "hello"), { callback: () => deps.onWorkerHello() });
  return service;
}
