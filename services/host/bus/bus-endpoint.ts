// One endpoint's request path, shared by every endpoint host-bus.ts adds: the reply rule
// (reply-rules.ts), then the request served here (the drain gate counts it) or, for a session another
// host owns, placed there once (forward.ts). Replies, errors included, are made in reply.ts.
import type { NatsConnection } from "@nats-io/nats-core";
import type { Service, ServiceMsg } from "@nats-io/services";
import { AppError } from "../../protocol/app-error.ts";
import { decodeJson } from "../../protocol/envelope.ts";
import { errorFields, type Logger, newRequestId, withRequestId } from "../../runtime/log.ts";
import type { MethodSpec } from "../../protocol/methods.ts";
import { acceptRequestId, REQUEST_ID_HEADER } from "../../protocol/rpc-client.ts";
import type { AgentHello } from "../../protocol/schemas.ts";
import type { AgentHandlers, HookHandler } from "./agent-api.ts";
import { type ForwardedRequest, type Forwarding, type SessionRef, sessionRefOf } from "./forward.ts";
import type { Replier } from "./reply.ts";
import type { DrainGate } from "./drain-gate.ts";
import type { Gate } from "./gates.ts";
import type { ClientHandlerMap, RequestContext } from "./request-context.ts";
import type { HostMetrics } from "../metrics.ts";
import { type RefusedReply, replyRefusal } from "./reply-rules.ts";

/** A request's id: the caller's `Pi-Request-Id` when well-formed, else a new one (logged and replied). */
function requestIdOf(msg: ServiceMsg): string {
  return acceptRequestId(msg.headers?.get(REQUEST_ID_HEADER)) ?? newRequestId();
}

/** What the bus serves and whom it tells: the connection, the handlers, the gate and the hooks. */
export interface HostBusDeps {
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
}

/**
 * An endpoint's parts. `onError` names the log event of a subscription error (none: ignored);
 * `callerOf` says who the message proves to be from, so that only that caller's inbox is answered.
 * The body is parsed once, in `handleRequest`, for both (a body that is not JSON proves no caller and
 * is refused by `serve`). `specOf` names the method, whose session field routes the request to its
 * owner (forward.ts); a request forwarded here (`via`) went through all of this on the forwarder and
 * goes through it again, but is never forwarded on.
 */
export interface Endpoint {
  subject: string;
  onError: string | null;
  callerOf: (msg: ServiceMsg, body: unknown) => string | null;
  serve: (msg: ServiceMsg, body: unknown, ctx: RequestContext) => Promise<unknown>;
  specOf: ((subject: string) => MethodSpec | undefined) | null;
}

/** A subject pattern whose requests may arrive forwarded from another host, and how to serve them. */
export interface Route {
  matches: (subject: string) => boolean;
  handle: (msg: ServiceMsg, via: ForwardedRequest) => void;
}

/** What the bus's steps share once the service is up. */
export interface HostBus {
  deps: HostBusDeps;
  service: Service;
  replier: Replier;
  /** The routes of the endpoints with a method table entry, for requests forwarded here. */
  routes: Route[];
  isTestSubject: (subject: string) => boolean;
}

/** Serves a request on this host, unless draining refuses it (retriable). */
function serveHere(
  bus: HostBus,
  ep: Endpoint,
  msg: ServiceMsg,
  body: unknown,
  bodyError: unknown,
  ctx: RequestContext = {},
): void {
  const { replier } = bus;
  const run = () => (bodyError !== null ? Promise.reject(bodyError) : ep.serve(msg, body, ctx));
  // Draining: a new request is refused (retriable), one already running finishes (drain gate).
  const drain = bus.isTestSubject(ep.subject) ? undefined : bus.deps.drain;
  if (drain?.draining) {
    replier.reply(msg, ep.subject, () =>
      Promise.reject(new AppError("HOST_SHUTTING_DOWN", "the host is shutting down; retry")),
    );
    return;
  }
  replier.reply(msg, ep.subject, drain ? () => drain.track(run) : run);
}

/** A request that names a session: served where its owner is (here, or forwarded there once). */
function placeRequest(
  bus: HostBus,
  ep: Endpoint,
  fwd: Forwarding,
  ref: SessionRef,
  msg: ServiceMsg,
  body: unknown,
  caller: string | null,
): void {
  const { deps, replier } = bus;
  const track = <T>(work: () => Promise<T>) => (deps.drain ? deps.drain.track(work) : work());
  const refuse = (e: unknown) => replier.reply(msg, ep.subject, () => Promise.reject(e));
  void track(() => fwd.placement(ref)).then(({ forwardTo, sessionId }) => {
    if (forwardTo === null) {
      serveHere(bus, ep, msg, body, null, sessionId === null ? {} : { sessionId });
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
}

/** One request on an endpoint: reply rule, then served here or where its session's owner is. */
function handleRequest(bus: HostBus, ep: Endpoint, msg: ServiceMsg, via: ForwardedRequest | null): void {
  const { deps } = bus;
  let body: unknown;
  let bodyError: unknown = null;
  try {
    body = decodeJson(msg.data);
  } catch (e) {
    bodyError = e;
  }
  const caller = ep.callerOf(msg, body);
  const reason = replyRefusal(msg.reply, caller, deps.devMode);
  if (reason) {
    deps.onReplyRefused({ subject: msg.subject, reply: msg.reply, caller, reason });
    via?.notServed(reason);
    return;
  }
  // Several hosts: a session another host owns is served there (forwarded once, never on).
  const fwd = deps.forwarding;
  const ref =
    fwd && !via && bodyError === null && ep.specOf ? sessionRefOf(ep.specOf(msg.subject), body) : null;
  if (!fwd || !ref || deps.drain?.draining) {
    serveHere(bus, ep, msg, body, bodyError);
    return;
  }
  placeRequest(bus, ep, fwd, ref, msg, body, caller);
}

export function addEndpoint(bus: HostBus, name: string, ep: Endpoint) {
  const handle = (msg: ServiceMsg, via: ForwardedRequest | null) =>
    withRequestId(requestIdOf(msg), () => handleRequest(bus, ep, msg, via));
  const specOf = ep.specOf;
  if (specOf) bus.routes.push({ matches: (s) => specOf(s) !== undefined, handle });
  return bus.service.addEndpoint(name, {
    subject: ep.subject,
    handler: (err, msg) => {
      if (err) {
        if (ep.onError) bus.deps.log.error(ep.onError, errorFields(err));
        return;
      }
      handle(msg, null);
    },
  });
}
