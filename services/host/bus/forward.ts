// Requests reach any host (issue #16 clause 4, docs/protocol.md "Several hosts"): a request whose
// session another host owns is forwarded ONCE on `<prefix>.host.fwd.<owner>`, and the owner's reply is
// passed on unchanged. The owner decodes, authorizes and checks reply rules again (host-bus.ts); this
// module never decides anything for it, never retries and never takes a session over.
import { headers, type MsgHdrs, type NatsConnection, nuid } from "@nats-io/nats-core";
import type { ServiceMsg } from "@nats-io/services";
import { AppError } from "../../protocol/app-error.ts";
import { currentRequestId, errorFields, type Logger } from "../../protocol/log.ts";
import type { MethodSpec } from "../../protocol/methods.ts";
import { positiveIntEnv } from "../../protocol/process-env.ts";
import { REQUEST_ID_HEADER } from "../../protocol/rpc-client.ts";
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

export const DEFAULT_FORWARD_TIMEOUT_MS = 5_000;

/** PI_FORWARD_TIMEOUT_MS: how long a forwarder waits for the owner's reply. */
export function forwardTimeoutMs(env: NodeJS.ProcessEnv): number {
  return positiveIntEnv(env, "PI_FORWARD_TIMEOUT_MS", DEFAULT_FORWARD_TIMEOUT_MS);
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

export function createForwarding(deps: {
  /** The connection requests are served on (the host's rpc user). */
  nc: NatsConnection;
  prefix: string;
  hostId: string;
  timeoutMs: number;
  log: Logger;
  /** The owner of the session a request field names: its host and that host's state; null: none. */
  ownerOf: (ref: SessionRef) => Promise<{ hostId: string; hostState: HostState } | null>;
}) {
  const { nc, prefix, hostId, log } = deps;
  const unavailable = (owner: string, message: string, cause?: unknown) =>
    new AppError("HOST_UNAVAILABLE", message, {
      ...(cause !== undefined ? { cause } : {}),
      details: { hostId: owner },
    });

  return {
    /** What this host subscribes to: requests forwarded to it. */
    subject: hostForwardSubject(prefix, hostId),

    /**
     * The host a request must be forwarded to, or null to serve it here (no session, no lease, or
     * ours). An owner that is `dead` or `stopped` is refused at once, HOST_UNAVAILABLE (retriable:
     * a takeover is coming); this host does not serve it.
     */
    async placement(ref: SessionRef): Promise<string | null> {
      const owner = await deps.ownerOf(ref);
      if (!owner || owner.hostId === hostId) return null;
      if (owner.hostState !== "running")
        throw unavailable(owner.hostId, `the session's host ${owner.hostId} is ${owner.hostState}; retry`);
      return owner.hostId;
    },

    /**
     * Forwards `msg` once to `owner` and passes its reply on unchanged (when `open()` still says the
     * request waits for one). Rejects HOST_UNAVAILABLE when the owner does not answer within the
     * timeout or nobody listens on its subject; nothing is retried.
     */
    async forward(msg: ServiceMsg, owner: string, caller: string | null, open: () => boolean): Promise<void> {
      const h = headers();
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
          timeout: deps.timeoutMs,
          headers: h,
          noMux: true,
          reply: hostForwardReplySubject(prefix, hostId, nuid.next()),
        });
      } catch (err) {
        log.warn("host.forward_failed", { subject: msg.subject, owner, ...errorFields(err) });
        throw unavailable(
          owner,
          `the session's host ${owner} did not answer within ${deps.timeoutMs} ms; retry`,
          err,
        );
      }
      const notServed = answer.headers?.get(FORWARD_HEADERS.notServed);
      if (notServed) {
        log.warn("host.forward_not_served", { subject: msg.subject, owner, reason: notServed });
        return;
      }
      if (!open()) return;
      msg.respond(answer.data, answer.headers ? { headers: answer.headers } : undefined);
    },

    /**
     * The request a forwarded message carries, answering on the forwarder's reply subject, or null
     * (logged) when it carries none.
     */
    received(fwd: ServiceMsg): ForwardedRequest | null {
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
    },
  };
}
export type Forwarding = ReturnType<typeof createForwarding>;
