// Registers the host as a NATS micro service (discoverable with standard tooling) and routes requests
// by the METHODS table: reply subject checked (reply-rules.ts) -> decode once, by the method's params
// schema -> the method's gate (gates.ts) -> the handler, typed by its method (request-context.ts).
// Replies, errors included, are made in reply.ts and nowhere else.
import type { Msg, NatsConnection, SubscriptionOptions } from "@nats-io/nats-core";
import { type Service, type ServiceMsg, Svcm } from "@nats-io/services";
import { AppError } from "../../protocol/app-error.ts";
import { decodeJson } from "../../protocol/envelope.ts";
import { errorFields, type Logger, newRequestId, withRequestId } from "../../runtime/log.ts";
import { AGENT_METHODS, type ClientMethod, type MethodSpec, methodSpec } from "../../protocol/methods.ts";
import { acceptRequestId, REQUEST_ID_HEADER } from "../../protocol/rpc-client.ts";
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
import type { AgentHandlers, HookHandler } from "./agent-api.ts";
import { asServiceMsg, type ForwardedRequest, type Forwarding, sessionRefOf } from "./forward.ts";
import { createReplier } from "./reply.ts";
import type { DrainGate } from "./drain-gate.ts";
import type { Gate } from "./gates.ts";
import type { AnyClientHandler, ClientHandlerMap, RequestContext } from "./request-context.ts";
import type { HostMetrics } from "../metrics.ts";
import { type RefusedReply, replyRefusal } from "./reply-rules.ts";

/**
 * The body decoded by the method's params schema. A worker's token is checked before anything else
 * (docs/protocol.md, "Agent-worker protocol"), so a token-gated body is left to its handler, which
 * checks the token first and then decodes with the same schema.
 */
function decodeBody(spec: MethodSpec, body: unknown): unknown {
  return spec.gate === "token" ? body : decodeParams(spec.params, body);
}

/** A request's id: the caller's `Pi-Request-Id` when well-formed, else a new one (logged and replied). */
function requestIdOf(msg: ServiceMsg): string {
  return acceptRequestId(msg.headers?.get(REQUEST_ID_HEADER)) ?? newRequestId();
}

export async function startHostBus(deps: {
  nc: NatsConnection;
  prefix: string;
  hostId: string;
  version: string;
  log: Logger;
  client: ClientHandlerMap;
  /** The METHODS table's `gate` of each client method, checked before its handler (gates.ts). */
  gate: Gate;
  agent: AgentHandlers;
  test: Record<string, HookHandler> | null;
  /** A worker's hello: its body when it decodes (what it serves), else null. */
  onWorkerHello: (hello: AgentHello | null) => void;
  /** A worker said goodbye on its own subject (`<prefix>.agent.goodbye.<workerId>`): it stopped. */
  onWorkerGoodbye?: (workerId: string) => void;
  /** Development mode also answers the shared `_INBOX.` (reply-rules.ts). */
  devMode: boolean;
  /** The worker an agent request proves to be from (a claim's workerId, a valid token's lease), or null. */
  workerOf: (method: string, body: unknown) => string | null;
  /** A request not served because of its reply subject (logged and audited by the caller). */
  onReplyRefused: (refused: RefusedReply) => void;
  /** The drain on SIGTERM: new requests refused HOST_SHUTTING_DOWN, those in flight counted. */
  drain?: DrainGate;
  /** Several hosts (forward.ts): a request whose session another host owns is forwarded to it once. */
  forwarding?: Forwarding;
  /** Requests and replies by method and code (metrics.ts). */
  metrics?: Pick<HostMetrics, "request" | "reply">;
}): Promise<Service> {
  const { nc, prefix, log } = deps;
  const metrics = deps.metrics;
  const isTestSubject = (subject: string) =>
    subject.startsWith(testSubject(prefix, "")) ||
    subject.startsWith(hostTestSubject(prefix, deps.hostId, ""));
  const agentMethodOf = new Map<string, string>(
    AGENT_METHODS.map((m) => [workerHostSubject(prefix, deps.hostId, m), m]),
  );
  const replier = createReplier(
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

  // `$SRV` requests (PING, INFO, STATS) are answered by the services library itself: they get the
  // reply rule too, so no one can make the host publish on a subject that is not an inbox.
  const service = await new Svcm(
    withReplyRuleOnControl(nc, (msg) => {
      const reason = replyRefusal(msg.reply, null, deps.devMode);
      if (reason) deps.onReplyRefused({ subject: msg.subject, reply: msg.reply, caller: null, reason });
      return reason === null;
    }),
  ).add({
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
   * `specOf` names the method, whose session field routes the request to its owner (forward.ts); a
   * request forwarded here (`via`) went through all of this on the forwarder and goes through it
   * again, but is never forwarded on.
   */
  const routes: Array<{
    matches: (subject: string) => boolean;
    handle: (msg: ServiceMsg, via: ForwardedRequest) => void;
  }> = [];
  const endpoint = (
    name: string,
    subject: string,
    onError: string | null,
    callerOf: (msg: ServiceMsg, body: unknown) => string | null,
    serve: (msg: ServiceMsg, body: unknown, ctx: RequestContext) => Promise<unknown>,
    specOf: ((subject: string) => MethodSpec | undefined) | null = null,
  ) => {
    const handle = (msg: ServiceMsg, via: ForwardedRequest | null) =>
      withRequestId(requestIdOf(msg), () => handleAs(msg, via));
    const handleAs = (msg: ServiceMsg, via: ForwardedRequest | null) => {
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
        via?.notServed(reason);
        return;
      }
      const serveHere = (ctx: RequestContext = {}) => {
        const run = () => (bodyError !== null ? Promise.reject(bodyError) : serve(msg, body, ctx));
        // Draining: a new request is refused (retriable), one already running finishes (drain gate).
        const drain = isTestSubject(subject) ? undefined : deps.drain;
        if (drain?.draining) {
          replier.reply(msg, subject, () =>
            Promise.reject(new AppError("HOST_SHUTTING_DOWN", "the host is shutting down; retry")),
          );
          return;
        }
        replier.reply(msg, subject, drain ? () => drain.track(run) : run);
      };
      // Several hosts: a session another host owns is served there (forwarded once, never on).
      const fwd = deps.forwarding;
      const ref =
        fwd && !via && bodyError === null && specOf ? sessionRefOf(specOf(msg.subject), body) : null;
      if (!fwd || !ref || deps.drain?.draining) {
        serveHere();
        return;
      }
      const track = <T>(work: () => Promise<T>) => (deps.drain ? deps.drain.track(work) : work());
      const refuse = (e: unknown) => replier.reply(msg, subject, () => Promise.reject(e));
      void track(() => fwd.placement(ref)).then(({ forwardTo, sessionId }) => {
        if (forwardTo === null) {
          serveHere(sessionId === null ? {} : { sessionId });
          return;
        }
        // Answered once: the owner's reply, or (timeout, drain cut) the refusal, never both.
        let open = true;
        track(() => fwd.forward(msg, forwardTo, caller, () => open)).catch((e) => {
          if (!open) return;
          open = false;
          refuse(e);
        });
      }, refuse);
    };
    if (specOf) routes.push({ matches: (s) => specOf(s) !== undefined, handle });
    return service.addEndpoint(name, {
      subject,
      handler: (err, msg) => {
        if (err) {
          if (onError) log.error(onError, errorFields(err));
          return;
        }
        handle(msg, null);
      },
    });
  };

  /** The principal of a well-formed rpc subject (NATS permissions tie it to the user), else null. */
  const principalOf = (msg: ServiceMsg): string | null => {
    const parsed = parseRpcSubject(prefix, msg.subject);
    return parsed && SUBJECT_TOKEN.test(parsed.principal) ? parsed.principal : null;
  };

  endpoint(
    "rpc",
    rpcWildcard(prefix),
    "host.rpc_subscription",
    principalOf,
    async (msg, body, ctx) => {
      const parsed = parseRpcSubject(prefix, msg.subject);
      if (!parsed || !SUBJECT_TOKEN.test(parsed.principal))
        throw new AppError("INVALID_PARAMS", "malformed subject");
      const spec = methodSpec(parsed.method);
      const method = parsed.method as ClientMethod;
      const handler: AnyClientHandler | undefined = Object.hasOwn(deps.client, method)
        ? (deps.client[method] as AnyClientHandler)
        : undefined;
      // Only client methods are served here: a worker method on an rpc subject is unknown.
      if (spec?.caller !== "person" || !handler)
        throw new AppError("UNKNOWN_METHOD", `no method ${parsed.method}`);
      // Decoded once, here; a caller its gate refuses never reaches the handler.
      const params = decodeParams(spec.params, body);
      const gated = await deps.gate(spec, parsed.principal, params, ctx);
      if (!gated.ok) return gated;
      return handler(parsed.principal, params, gated.value);
    },
    (subject) => {
      const method = parseRpcSubject(prefix, subject)?.method;
      const spec = method === undefined ? undefined : methodSpec(method);
      return spec?.caller === "person" ? spec : undefined;
    },
  );

  for (const method of AGENT_METHODS) {
    const handler = deps.agent[method];
    const spec = methodSpec(method);
    if (!handler || !spec) continue;
    const name = `agent-${method.replace(".", "-")}`;
    // This host's own worker subjects: a turn's offer names its owner, so a worker's calls come
    // straight here and are never forwarded (docs/protocol.md "Agent-worker protocol").
    endpoint(
      name,
      workerHostSubject(prefix, deps.hostId, method),
      "host.agent_subscription",
      (_msg, body) => deps.workerOf(method, body),
      async (_msg, body) => handler(decodeBody(spec, body)),
    );
  }

  // Requests other hosts forward here, for sessions this host owns: served as if they came directly.
  // On the host's own connection (its NATS user, not the serving one, publishes host to host).
  const forwarding = deps.forwarding;
  if (forwarding) {
    const sub = forwarding.nc.subscribe(forwarding.subject, {
      callback: (err, raw) => {
        if (err) {
          log.error("host.forward_subscription", errorFields(err));
          return;
        }
        const fwdMsg = asServiceMsg(raw);
        const request = forwarding.received(fwdMsg);
        if (!request) {
          replier.reply(fwdMsg, forwarding.subject, () =>
            Promise.reject(new AppError("INVALID_PARAMS", "a forwarded request without its subject")),
          );
          return;
        }
        const route = routes.find((r) => r.matches(request.msg.subject));
        if (route) route.handle(request.msg, request);
        else
          replier.reply(request.msg, forwarding.subject, () =>
            Promise.reject(new AppError("UNKNOWN_METHOD", "no method for the forwarded subject")),
          );
      },
    });
    void service.stopped.finally(() => sub.unsubscribe()).catch(() => {});
  }

  // Not in production without test hooks: the serving user has no right on `<prefix>.test.>`, and
  // a subscription the server refuses stops the whole service.
  // Each hook on `<prefix>.test.>` (any one host) and on this host's own `<prefix>.testhost.<id>.>`.
  if (deps.test || deps.devMode)
    for (const [name, head] of [
      ["test", testSubject(prefix, "")],
      ["test-host", hostTestSubject(prefix, deps.hostId, "")],
    ] as const)
      endpoint(
        name,
        `${head}>`,
        null,
        () => null,
        async (msg, body) => {
          if (!deps.test) throw new AppError("TEST_HOOKS_DISABLED");
          const hook = msg.subject.slice(head.length);
          const handler = Object.hasOwn(deps.test, hook) ? deps.test[hook] : undefined;
          if (!handler) throw new AppError("UNKNOWN_METHOD", `no test hook ${hook}`);
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
  // A stopping worker's goodbye: the subject's last token is its id (NATS permissions tie it to the worker).
  const goodbyeHead = workerGoodbyeWildcard(prefix).slice(0, -1);
  nc.subscribe(workerGoodbyeWildcard(prefix), {
    callback: (err, msg) => {
      const workerId = msg?.subject.slice(goodbyeHead.length) ?? "";
      if (!err && SUBJECT_TOKEN.test(workerId)) deps.onWorkerGoodbye?.(workerId);
    },
  });
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
