// Registers the host as a NATS micro service (discoverable with standard tooling) and routes requests
// by the METHODS table: reply subject checked (reply-rules.ts) -> decode once, by the method's params
// schema -> the method's gate (gates.ts) -> the handler, typed by its method (request-context.ts).
// Replies, errors included, are made in reply.ts and nowhere else.
import type { Msg, NatsConnection, SubscriptionOptions } from "@nats-io/nats-core";
import { type Service, type ServiceMsg, Svcm } from "@nats-io/services";
import { refuse } from "../../protocol/result.ts";
import { decodeJson } from "../../protocol/envelope.ts";
import { errorFields } from "../../runtime/log.ts";
import { AGENT_METHODS, type ClientMethod, type MethodSpec, methodSpec } from "../../protocol/methods.ts";
import { AgentHello, decodeParams } from "../../protocol/schemas.ts";
import {
  agentSubject,
  HOST_SERVICE_NAME,
  parseRpcSubject,
  rpcWildcard,
  SUBJECT_TOKEN,
  hostTestSubject,
  testSubject,
  workerGoodbyeWildcard,
  workerHostSubject,
} from "../../protocol/subjects.ts";
import { addEndpoint, type HostBus, type HostBusDeps } from "./bus-endpoint.ts";
import { asServiceMsg, type Forwarding } from "./forward.ts";
import { createReplier, type Replier } from "./reply.ts";
import type { AnyClientHandler, RequestContext } from "./request-context.ts";
import { replyRefusal } from "./reply-rules.ts";

export type { HostBusDeps } from "./bus-endpoint.ts";

/**
 * The body decoded by the method's params schema. A worker's token is checked before anything else
 * (docs/protocol.md, "Agent-worker protocol"), so a token-gated body is left to the token gate of
 * agent-api.ts (`tokenGated`), which checks the token first and then decodes it by the same schema, once.
 */
function decodeBody(spec: MethodSpec, body: unknown): unknown {
  return spec.gate === "token" ? body : decodeParams(spec.params, body);
}

function testSubjectCheck(deps: HostBusDeps): (subject: string) => boolean {
  const { prefix } = deps;
  return (subject) =>
    subject.startsWith(testSubject(prefix, "")) ||
    subject.startsWith(hostTestSubject(prefix, deps.hostId, ""));
}

function busReplier(deps: HostBusDeps, isTestSubject: (subject: string) => boolean): Replier {
  const { prefix, log } = deps;
  const metrics = deps.metrics;
  const agentMethodOf = new Map<string, string>(
    AGENT_METHODS.map((m) => [workerHostSubject(prefix, deps.hostId, m), m]),
  );
  return createReplier(
    log,
    metrics && {
      ...metrics,
      // The method a message is for; metrics.ts labels any name it does not know `unknown`.
      methodOf: (msg) =>
        agentMethodOf.get(msg.subject) ??
        parseRpcSubject(prefix, msg.subject)?.method ??
        (isTestSubject(msg.subject) ? "test" : "forward"),
    },
  );
}

async function addService(deps: HostBusDeps, replier: Replier): Promise<Service> {
  // `$SRV` requests (PING, INFO, STATS) are answered by the services library itself: they get the
  // reply rule too, so no one can make the host publish on a subject that is not an inbox.
  return new Svcm(
    withReplyRuleOnControl(deps.nc, (msg) => {
      const reason = replyRefusal(msg.reply, null, deps.devMode);
      if (reason) deps.onReplyRefused({ subject: msg.subject, reply: msg.reply, caller: null, reason });
      return reason === null;
    }),
  ).add({
    name: HOST_SERVICE_NAME,
    version: deps.version,
    description: "pi-host authority: sessions, tool policy, plan approvals",
    metadata: { hostId: deps.hostId, prefix: deps.prefix },
    statsHandler: replier.statsHandler,
  });
}

/** The principal of a well-formed rpc subject (NATS permissions tie it to the user), else null. */
function principalOf(prefix: string, msg: ServiceMsg): string | null {
  const parsed = parseRpcSubject(prefix, msg.subject);
  return parsed && SUBJECT_TOKEN.test(parsed.principal) ? parsed.principal : null;
}

async function serveRpc(
  deps: HostBusDeps,
  msg: ServiceMsg,
  body: unknown,
  ctx: RequestContext,
): Promise<unknown> {
  const parsed = parseRpcSubject(deps.prefix, msg.subject);
  if (!parsed || !SUBJECT_TOKEN.test(parsed.principal)) return refuse("INVALID_PARAMS", "malformed subject");
  const spec = methodSpec(parsed.method);
  const method = parsed.method as ClientMethod;
  const handler: AnyClientHandler | undefined = Object.hasOwn(deps.client, method)
    ? (deps.client[method] as AnyClientHandler)
    : undefined;
  // Only client methods are served here: a worker method on an rpc subject is unknown.
  if (spec?.caller !== "person" || !handler) return refuse("UNKNOWN_METHOD", `no method ${parsed.method}`);
  // Decoded once, here; a caller its gate refuses never reaches the handler.
  const params = decodeParams(spec.params, body);
  const gated = await deps.gate(spec, parsed.principal, params, ctx);
  if (!gated.ok) return gated;
  return handler(parsed.principal, params, gated.value);
}

function rpcSpecOf(prefix: string, subject: string): MethodSpec | undefined {
  const method = parseRpcSubject(prefix, subject)?.method;
  const spec = method === undefined ? undefined : methodSpec(method);
  return spec?.caller === "person" ? spec : undefined;
}

function addRpcEndpoint(bus: HostBus): void {
  const { deps } = bus;
  addEndpoint(bus, "rpc", {
    subject: rpcWildcard(deps.prefix),
    onError: "host.rpc_subscription",
    callerOf: (msg) => principalOf(deps.prefix, msg),
    serve: (msg, body, ctx) => serveRpc(deps, msg, body, ctx),
    specOf: (subject) => rpcSpecOf(deps.prefix, subject),
  });
}

function addAgentEndpoints(bus: HostBus): void {
  const { deps } = bus;
  for (const method of AGENT_METHODS) {
    const handler = deps.agent[method];
    const spec = methodSpec(method);
    if (!handler || !spec) continue;
    const name = `agent-${method.replace(".", "-")}`;
    // This host's own worker subjects: a turn's offer names its owner, so a worker's calls come
    // straight here and are never forwarded (docs/protocol.md "Agent-worker protocol").
    addEndpoint(bus, name, {
      subject: workerHostSubject(deps.prefix, deps.hostId, method),
      onError: "host.agent_subscription",
      callerOf: (_msg, body) => deps.workerOf(method, body),
      serve: async (_msg, body) => handler(decodeBody(spec, body)),
      specOf: null,
    });
  }
}

/**
 * Requests other hosts forward here, for sessions this host owns: served as if they came directly.
 * On the host's own connection (its NATS user, not the serving one, publishes host to host).
 */
function subscribeForwarded(bus: HostBus, forwarding: Forwarding): void {
  const { replier, routes } = bus;
  const sub = forwarding.nc.subscribe(forwarding.subject, {
    callback: (err, raw) => {
      if (err) {
        bus.deps.log.error("host.forward_subscription", errorFields(err));
        return;
      }
      const fwdMsg = asServiceMsg(raw);
      const request = forwarding.received(fwdMsg);
      if (!request) {
        replier.reply(fwdMsg, forwarding.subject, () =>
          Promise.resolve(refuse("INVALID_PARAMS", "a forwarded request without its subject")),
        );
        return;
      }
      const route = routes.find((r) => r.matches(request.msg.subject));
      if (route) route.handle(request.msg, request);
      else
        replier.reply(request.msg, forwarding.subject, () =>
          Promise.resolve(refuse("UNKNOWN_METHOD", "no method for the forwarded subject")),
        );
    },
  });
  void bus.service.stopped.finally(() => sub.unsubscribe()).catch(() => {});
}

/** Each hook on `<prefix>.test.>` (any one host) and on this host's own `<prefix>.testhost.<id>.>`. */
function addTestEndpoints(bus: HostBus): void {
  const { deps } = bus;
  for (const [name, head] of [
    ["test", testSubject(deps.prefix, "")],
    ["test-host", hostTestSubject(deps.prefix, deps.hostId, "")],
  ] as const)
    addEndpoint(bus, name, {
      subject: `${head}>`,
      onError: null,
      callerOf: () => null,
      serve: async (msg, body) => {
        if (!deps.test) return refuse("TEST_HOOKS_DISABLED");
        const hook = msg.subject.slice(head.length);
        const handler = Object.hasOwn(deps.test, hook) ? deps.test[hook] : undefined;
        if (!handler) return refuse("UNKNOWN_METHOD", `no test hook ${hook}`);
        return handler(body);
      },
      specOf: null,
    });
}

function subscribeWorkers(deps: HostBusDeps): void {
  const { nc, prefix } = deps;
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
  // A stopping worker's goodbye: the subject's last token is its id (NATS permissions tie it to the worker).
  const goodbyeHead = workerGoodbyeWildcard(prefix).slice(0, -1);
  nc.subscribe(workerGoodbyeWildcard(prefix), {
    callback: (err, msg) => {
      const workerId = msg?.subject.slice(goodbyeHead.length) ?? "";
      if (!err && SUBJECT_TOKEN.test(workerId)) deps.onWorkerGoodbye?.(workerId);
    },
  });
}

export async function startHostBus(deps: HostBusDeps): Promise<Service> {
  const isTestSubject = testSubjectCheck(deps);
  const replier = busReplier(deps, isTestSubject);
  const service = await addService(deps, replier);
  const bus: HostBus = { deps, service, replier, routes: [], isTestSubject };
  addRpcEndpoint(bus);
  addAgentEndpoints(bus);
  if (deps.forwarding) subscribeForwarded(bus, deps.forwarding);
  // Not in production without test hooks: the serving user has no right on `<prefix>.test.>`, and
  // a subscription the server refuses stops the whole service.
  if (deps.test || deps.devMode) addTestEndpoints(bus);
  subscribeWorkers(deps);
  return service;
}

/**
 * The serving connection as the services library sees it: its own control subscriptions (`$SRV.*`)
 * deliver a message only when `admit` says its reply may be answered; everything else is `nc`.
 */
function withReplyRuleOnControl(nc: NatsConnection, admit: (msg: Msg) => boolean): NatsConnection {
  const subscribe = (subject: string, opts?: SubscriptionOptions) => {
    const callback = opts?.callback;
    if (!subject.startsWith("$SRV.") || !callback) return nc.subscribe(subject, opts);
    return nc.subscribe(subject, {
      ...opts,
      callback: (err, msg) => {
        if (!err && !admit(msg)) return;
        callback(err, msg);
      },
    });
  };
  return new Proxy(nc, {
    get(target, key) {
      if (key === "subscribe") return subscribe;
      const v = Reflect.get(target, key, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
}
