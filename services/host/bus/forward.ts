// Requests reach any host (issue #16 clause 4, docs/protocol.md "Several hosts"): a request whose
// session another host owns is forwarded ONCE on `<prefix>.host.fwd.<owner>`, and the owner's reply is
// passed on unchanged. The owner decodes, authorizes and checks reply rules again (host-bus.ts); this
// module never decides anything for it, never retries and never takes a session over.
import { headers, type Msg, type MsgHdrs, type NatsConnection, nuid } from "@nats-io/nats-core";
import { ServiceErrorCodeHeader, ServiceErrorHeader, type ServiceMsg } from "@nats-io/services";
import { AppError } from "../../protocol/app-error.ts";
import { currentRequestId, errorFields, type Logger } from "../../runtime/log.ts";
import type { MethodSpec } from "../../protocol/methods.ts";
import { positiveIntEnv } from "../../runtime/process-env.ts";
import { REQUEST_ID_HEADER, TIMEOUT_HEADER } from "../../protocol/rpc-client.ts";
import { hostForwardReplySubject, hostForwardSubject, SUBJECT_TOKEN } from "../../protocol/subjects.ts";
import type { HostState } from "../store/session-leases.ts";
import type { SessionField } from "../store/request-session.ts";

/**
 * The forwarded message is the original body, byte for byte (so it stays within the server's
 * max_payload as the original did), with what the owner needs in these headers.
 */
export const FORWARD_HEADERS = {
  subject: "Pi-Forward-Subject",
  reply: "Pi-Forward-Reply",
  /** Who the forwarder's reply rules took the caller to be (logged by the owner, never trusted). */
  caller: "Pi-Forward-Caller",
  from: "Pi-Forward-From",
  /** On the owner's answer: the request was not served (its reply rules refused it); send nothing. */
  notServed: "Pi-Not-Served",
} as const;

/** How long a forwarder waits for a caller that does not say how long it waits (no Pi-Timeout-Ms). */
export const DEFAULT_FORWARD_TIMEOUT_MS = 5_000;
/** The longest wait a caller may ask for (a tool's permission prompt waits at most this long). */
export const MAX_FORWARD_TIMEOUT_MS = 15 * 60_000;

/** PI_FORWARD_TIMEOUT_MS: the wait for callers that send no Pi-Timeout-Ms header. */
export function forwardTimeoutMs(env: NodeJS.ProcessEnv): number {
  return positiveIntEnv(env, "PI_FORWARD_TIMEOUT_MS", DEFAULT_FORWARD_TIMEOUT_MS);
}

/**
 * How long to wait for the owner: the caller's own timeout (its Pi-Timeout-Ms header, bounded),
 * less a margin so the forwarder's refusal reaches the caller before the caller gives up; without
 * the header, `fallbackMs`.
 */
export function forwardWaitMs(hdrs: MsgHdrs | undefined, fallbackMs: number): number {
  const raw = hdrs?.get(TIMEOUT_HEADER);
  const asked = raw && /^\d{1,9}$/.test(raw) ? Math.min(Number(raw), MAX_FORWARD_TIMEOUT_MS) : null;
  if (asked === null || asked <= 0) return fallbackMs;
  return Math.max(1, asked - Math.min(500, Math.floor(asked / 10)));
}

/**
 * A message of a plain subscription as the replier (reply.ts) takes it: `respondError` sets the
 * service error headers exactly as the services library does for its own endpoints.
 */
export function asServiceMsg(msg: Msg): ServiceMsg {
  // Answers always go to this message's own reply subject: `received` below derives the forwarded
  // request from it with the original reply subject in its place, for the reply rules only.
  return Object.create(msg, {
    reply: { value: msg.reply ?? "" },
    respond: { value: (data?: Uint8Array, opts?: { headers?: MsgHdrs }) => msg.respond(data, opts) },
    respondError: {
      value(code: number, description: string, data?: Uint8Array, opts?: { headers?: MsgHdrs }) {
        const h = opts?.headers ?? headers();
        h.set(ServiceErrorCodeHeader, `${code}`);
        h.set(ServiceErrorHeader, description);
        return msg.respond(data, { ...opts, headers: h });
      },
    },
  }) as ServiceMsg;
}

/** The session field of a request's body, when the method names one and the body carries it. */
export interface SessionRef {
  field: SessionField;
  id: string;
}

export function sessionRefOf(spec: MethodSpec | undefined, body: unknown): SessionRef | null {
  const field = spec?.session;
  if (!field || typeof body !== "object" || body === null) return null;
  const id = (body as Record<string, unknown>)[field];
  // Anything else is refused by the method's own decoding, where the request arrived.
  return typeof id === "string" && SUBJECT_TOKEN.test(id) ? { field, id } : null;
}

/** A forwarded request as the owner serves it: the original subject, reply subject and body. */
export interface ForwardedRequest {
  msg: ServiceMsg;
  /** The forwarding host. */
  from: string;
  /** Tells the forwarder the request was not served (so it sends nothing on). */
  notServed(reason: string): void;
}

/** What forwarding needs: the host's own connection, its identity and how to find a session's owner. */
export interface ForwardingDeps {
  /**
   * The host's own connection (its NATS user, which alone publishes and subscribes host to host);
   * never the serving one, whose user may publish only into inboxes (docs/security.md "The bus").
   */
  nc: NatsConnection;
  prefix: string;
  hostId: string;
  /** The wait for a caller that sends no Pi-Timeout-Ms (PI_FORWARD_TIMEOUT_MS). */
  timeoutMs: number;
  log: Logger;
  /**
   * The session a request field names and its owner: the session id, its lease's host and that
   * host's state (null host: no lease); null when no row has the id.
   */
  ownerOf: (
    ref: SessionRef,
  ) => Promise<{ sessionId: string; hostId: string | null; hostState: HostState | null } | null>;
}

function unavailable(owner: string, message: string, cause?: unknown): AppError {
  return new AppError("HOST_UNAVAILABLE", message, {
    ...(cause !== undefined ? { cause } : {}),
    details: { hostId: owner },
  });
}

/**
 * Where a request is served: `forwardTo` the owner host, or null to serve it here (no session, no
 * lease, or ours), with the session it concerns when a row named it (the handler then reads
 * nothing to find it). An owner that is `dead` or `stopped` is refused at once, HOST_UNAVAILABLE
 * (retriable: a takeover is coming); this host does not serve it.
 */
async function placement(
  deps: ForwardingDeps,
  ref: SessionRef,
): Promise<{ forwardTo: string | null; sessionId: string | null }> {
  const owner = await deps.ownerOf(ref);
  if (!owner) return { forwardTo: null, sessionId: null };
  if (owner.hostId === null || owner.hostId === deps.hostId)
    return { forwardTo: null, sessionId: owner.sessionId };
  if (owner.hostState !== "running")
    throw unavailable(owner.hostId, `the session's host ${owner.hostId} is ${owner.hostState}; retry`);
  return { forwardTo: owner.hostId, sessionId: owner.sessionId };
}

/**
 * Forwards `msg` once to `owner` and passes its reply on unchanged (when `open()` still says the
 * request waits for one). Rejects HOST_UNAVAILABLE (retriable) when the owner does not answer
 * within the caller's own timeout or nobody listens on its subject; nothing is retried here, and
 * the caller's retry is safe (every method a person may repeat returns the recorded result).
 */
async function forward(
  deps: ForwardingDeps,
  msg: ServiceMsg,
  owner: string,
  caller: string | null,
  open: () => boolean,
): Promise<void> {
  const { nc, prefix, hostId, log } = deps;
  const waitMs = forwardWaitMs(msg.headers, deps.timeoutMs);
  const h = headers();
  // The owner's own reply rules and handlers see the caller's wait too (a nested forward never happens).
  h.set(TIMEOUT_HEADER, String(waitMs));
  h.set(FORWARD_HEADERS.subject, msg.subject);
  h.set(FORWARD_HEADERS.reply, msg.reply ?? "");
  h.set(FORWARD_HEADERS.caller, caller ?? "");
  h.set(FORWARD_HEADERS.from, hostId);
  // The owner serves it under the same request id (its log lines and reply carry it).
  const requestId = currentRequestId();
  if (requestId !== undefined) h.set(REQUEST_ID_HEADER, requestId);
  log.info("host.request_forwarded", { subject: msg.subject, owner });
  let answer: Awaited<ReturnType<NatsConnection["request"]>>;
  try {
    answer = await nc.request(hostForwardSubject(prefix, owner), msg.data, {
      timeout: waitMs,
      headers: h,
      noMux: true,
      reply: hostForwardReplySubject(prefix, hostId, nuid.next()),
    });
  } catch (err) {
    log.warn("host.forward_failed", { subject: msg.subject, owner, ...errorFields(err) });
    throw unavailable(owner, `the session's host ${owner} did not answer within ${waitMs} ms; retry`, err);
  }
  const notServed = answer.headers?.get(FORWARD_HEADERS.notServed);
  if (notServed) {
    log.warn("host.forward_not_served", { subject: msg.subject, owner, reason: notServed });
    return;
  }
  if (!open()) return;
  msg.respond(answer.data, answer.headers ? { headers: answer.headers } : undefined);
}

/**
 * The request a forwarded message carries, answering on the forwarder's reply subject, or null
 * (logged) when it carries none.
 */
function received(log: Logger, fwd: ServiceMsg): ForwardedRequest | null {
  const h: MsgHdrs | undefined = fwd.headers;
  const subject = h?.get(FORWARD_HEADERS.subject) ?? "";
  const from = h?.get(FORWARD_HEADERS.from) ?? "";
  if (!subject || !fwd.reply) {
    log.warn("host.forward_malformed", { subject: fwd.subject, from });
    return null;
  }
  const reply = h?.get(FORWARD_HEADERS.reply) || undefined;
  log.info("host.forward_received", { subject, from, caller: h?.get(FORWARD_HEADERS.caller) || null });
  // The original request as this host would have received it; its answer goes to the forwarder.
  // Of the headers only the request id is kept (host-bus.ts serves the request under it).
  const requestId = h?.get(REQUEST_ID_HEADER);
  let kept: MsgHdrs | undefined;
  if (requestId) {
    kept = headers();
    kept.set(REQUEST_ID_HEADER, requestId);
  }
  const msg = Object.create(fwd, {
    subject: { value: subject },
    reply: { value: reply },
    headers: { value: kept },
  }) as ServiceMsg;
  return {
    msg,
    from,
    notServed(reason) {
      const n = headers();
      n.set(FORWARD_HEADERS.notServed, reason);
      fwd.respond(new Uint8Array(0), { headers: n });
    },
  };
}

export function createForwarding(deps: ForwardingDeps) {
  return {
    /** The connection forwarded requests travel on (host-bus.ts subscribes to `subject` on it). */
    nc: deps.nc,
    /** What this host subscribes to: requests forwarded to it. */
    subject: hostForwardSubject(deps.prefix, deps.hostId),
    /** Where a request is served (see `placement`). */
    placement: (ref: SessionRef) => placement(deps, ref),
    /** Forwards a request once to its owner host (see `forward`). */
    forward: (msg: ServiceMsg, owner: string, caller: string | null, open: () => boolean) =>
      forward(deps, msg, owner, caller, open),
    /** The request a forwarded message carries (see `received`). */
    received: (fwd: ServiceMsg) => received(deps.log, fwd),
  };
}
export type Forwarding = ReturnType<typeof createForwarding>;
