// Registers the host as a NATS micro service (discoverable with standard tooling) and routes requests
// by the METHODS table: reply subject checked (reply-rules.ts) -> decode -> authorize (the caller
// kind) -> delegate to the handler. Replies, errors included, are made in reply.ts and nowhere else.
import type { NatsConnection } from "@nats-io/nats-core";
import { type Service, type ServiceMsg, Svcm } from "@nats-io/services";
import { AppError } from "../../protocol/app-error.ts";
import { decodeJson } from "../../protocol/envelope.ts";
import { errorFields, type Logger } from "../../protocol/log.ts";
import { AGENT_METHODS, type MethodSpec, methodSpec } from "../../protocol/methods.ts";
import { AgentHello, decodeParams } from "../../protocol/schemas.ts";
import {
  agentSubject,
  HOST_SERVICE_NAME,
  parseRpcSubject,
  rpcWildcard,
  SUBJECT_TOKEN,
  testSubject,
} from "../../protocol/subjects.ts";
import type { AgentHandler } from "./agent-api.ts";
import type { ClientHandler } from "./client-api.ts";
import { createReplier } from "./reply.ts";
import { type RefusedReply, replyRefusal } from "./reply-rules.ts";

/**
 * The body decoded by the method's params schema. A worker's token is checked before anything else
 * (docs/protocol.md, "Agent-worker protocol"), so a token-gated body is left to its handler, which
 * checks the token first and then decodes with the same schema.
 */
function decodeBody(spec: MethodSpec, body: unknown): unknown {
  return spec.gate === "token" ? body : decodeParams(spec.params, body);
}

export async function startHostBus(deps: {
  nc: NatsConnection;
  prefix: string;
  hostId: string;
  version: string;
  log: Logger;
  client: Record<string, ClientHandler>;
  agent: Record<string, AgentHandler>;
  test: Record<string, AgentHandler> | null;
  /** A worker's hello: its body when it decodes (what it serves), else null. */
  onWorkerHello: (hello: AgentHello | null) => void;
  /** Development mode also answers the shared `_INBOX.` (reply-rules.ts). */
  devMode: boolean;
  /** The worker an agent request proves to be from (a claim's workerId, a valid token's lease), or null. */
  workerOf: (method: string, body: unknown) => string | null;
  /** A request not served because of its reply subject (logged and audited by the caller). */
  onReplyRefused: (refused: RefusedReply) => void;
}): Promise<Service> {
  const { nc, prefix, log } = deps;
  const replier = createReplier(log);

  const service = await new Svcm(nc).add({
    name: HOST_SERVICE_NAME,
    version: deps.version,
    description: "pi-host authority: sessions, tool policy, plan approvals",
    metadata: { hostId: deps.hostId, prefix },
    statsHandler: replier.statsHandler,
  });

  /**
   * `onError` names the log event of a subscription error (none: ignored); `callerOf` says who the
   * message proves to be from, so that only that caller's inbox is answered. The body is parsed
   * once, here, for both (a body that is not JSON proves no caller and is refused by `serve`).
   */
  const endpoint = (
    name: string,
    subject: string,
    onError: string | null,
    callerOf: (msg: ServiceMsg, body: unknown) => string | null,
    serve: (msg: ServiceMsg, body: unknown) => Promise<unknown>,
  ) =>
    service.addEndpoint(name, {
      subject,
      handler: (err, msg) => {
        if (err) {
          if (onError) log.error(onError, errorFields(err));
          return;
        }
        let body: unknown;
        let bodyError: unknown = null;
        try {
          body = decodeJson(msg.data);
        } catch (e) {
          bodyError = e;
        }
        const caller = callerOf(msg, body);
        const reason = replyRefusal(msg.reply, caller, deps.devMode);
        if (reason) {
          deps.onReplyRefused({ subject: msg.subject, reply: msg.reply, caller, reason });
          return;
        }
        replier.reply(msg, subject, () =>
          bodyError !== null ? Promise.reject(bodyError) : serve(msg, body),
        );
      },
    });

  /** The principal of a well-formed rpc subject (NATS permissions tie it to the user), else null. */
  const principalOf = (msg: ServiceMsg): string | null => {
    const parsed = parseRpcSubject(prefix, msg.subject);
    return parsed && SUBJECT_TOKEN.test(parsed.principal) ? parsed.principal : null;
  };

  endpoint("rpc", rpcWildcard(prefix), "host.rpc_subscription", principalOf, async (msg, body) => {
    const parsed = parseRpcSubject(prefix, msg.subject);
    if (!parsed || !SUBJECT_TOKEN.test(parsed.principal))
      throw new AppError("INVALID_PARAMS", "malformed subject");
    const spec = methodSpec(parsed.method);
    const handler = Object.hasOwn(deps.client, parsed.method) ? deps.client[parsed.method] : undefined;
    // Only client methods are served here: a worker method on an rpc subject is unknown.
    if (spec?.caller !== "person" || !handler)
      throw new AppError("UNKNOWN_METHOD", `no method ${parsed.method}`);
    return handler(parsed.principal, decodeBody(spec, body));
  });

  for (const method of AGENT_METHODS) {
    const handler = deps.agent[method];
    const spec = methodSpec(method);
    if (!handler || !spec) continue;
    const name = `agent-${method.replace(".", "-")}`;
    endpoint(
      name,
      agentSubject(prefix, method),
      "host.agent_subscription",
      (_msg, body) => deps.workerOf(method, body),
      async (_msg, body) => handler(decodeBody(spec, body)),
    );
  }

  // Not in production without test hooks: the serving user has no right on `<prefix>.test.>`, and
  // a subscription the server refuses stops the whole service.
  if (deps.test || deps.devMode)
    endpoint(
      "test",
      testSubject(prefix, ">"),
      null,
      () => null,
      async (msg, body) => {
        if (!deps.test) throw new AppError("TEST_HOOKS_DISABLED");
        const name = msg.subject.slice(testSubject(prefix, "").length);
        const handler = Object.hasOwn(deps.test, name) ? deps.test[name] : undefined;
        if (!handler) throw new AppError("UNKNOWN_METHOD", `no test hook ${name}`);
        return handler(body);
      },
    );

  // Workers announce themselves; waiting offers are re-published at once.
  nc.subscribe(agentSubject(prefix, "hello"), {
    callback: (err, msg) => {
      if (err) return;
      let hello: AgentHello | null = null;
      try {
        hello = decodeParams(AgentHello, decodeJson(msg.data));
      } catch {
        // An undecodable hello still re-offers waiting turns; it announces nothing.
      }
      deps.onWorkerHello(hello);
    },
  });
  return service;
}
