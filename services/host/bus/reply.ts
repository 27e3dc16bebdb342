// The host's one place where a handler's outcome becomes a wire reply: a value is {"result": ...};
// an AppError, a Result refusal or a bug is {"error": ...} with the NATS service error headers
// (docs/protocol.md, "Service error headers"), counted per endpoint for the service's stats.
import { headers } from "@nats-io/nats-core";
import type { Endpoint, ServiceMsg } from "@nats-io/services";
import { AppError } from "../../protocol/app-error.ts";
import { errorBody, okReply } from "../../protocol/envelope.ts";
import type { ErrorCode } from "../../protocol/error-codes.ts";
import { currentRequestId, errorFields, type Logger } from "../../runtime/log.ts";
import { REQUEST_ID_HEADER } from "../../protocol/rpc-client.ts";
import { type Refusal, refusalError } from "../../protocol/result.ts";
import { serviceErrorStatus } from "../../protocol/service-errors.ts";
import { fencedAppError, lostConnectionAppError } from "../store/db.ts";

/** Worker methods too frequent to log each success of: heartbeats and live deltas. */
const QUIET_OK = /\.agent\.host\.[^.]+\.(heartbeat|delta)$/;

/** What `$SRV.STATS` shows as an endpoint's `data`: its error replies, in total and by code. */
export interface EndpointErrorStats {
  errors: number;
  codes: Partial<Record<ErrorCode, number>>;
}

/** A handler's `Result` refusal (result.ts), told apart from a plain value by its exact shape. */
function refusalOf(value: unknown): Refusal | null {
  if (typeof value !== "object" || value === null) return null;
  const v = value as Record<string, unknown>;
  if (v.ok !== false || Object.keys(v).length !== 2 || typeof v.refusal !== "object" || v.refusal === null)
    return null;
  return typeof (v.refusal as Refusal).code === "string" ? (v.refusal as Refusal) : null;
}

function okValueOf(value: unknown): unknown {
  if (typeof value !== "object" || value === null) return value;
  const v = value as Record<string, unknown>;
  return v.ok === true && "value" in v && Object.keys(v).length === 2 ? v.value : value;
}

/** The request's id as a reply header (host-bus.ts runs each request under its id), if any. */
function replyOptions(): { headers: ReturnType<typeof headers> } | undefined {
  const requestId = currentRequestId();
  if (requestId === undefined) return undefined;
  const h = headers();
  h.set(REQUEST_ID_HEADER, requestId);
  return { headers: h };
}

/** Header values are one line. */
const oneLine = (text: string) => text.replace(/[\r\n]+/g, " ") || "error";

/** Counts requests and replies (metrics.ts): the method a message is for, and each reply's code. */
export interface ReplyObserver {
  methodOf(msg: ServiceMsg): string;
  request(method: string): void;
  reply(method: string, code: string, seconds: number): void;
}

export function createReplier(log: Logger, observer?: ReplyObserver) {
  const stats = new Map<string, EndpointErrorStats>();

  function count(subject: string, code: ErrorCode): void {
    let s = stats.get(subject);
    if (!s) {
      s = { errors: 0, codes: {} };
      stats.set(subject, s);
    }
    s.errors += 1;
    s.codes[code] = (s.codes[code] ?? 0) + 1;
  }

  /** The error reply: the JSON body as always, plus Nats-Service-Error(-Code) headers. */
  function replyError(
    msg: ServiceMsg,
    endpointSubject: string,
    raw: unknown,
    observed?: (code: string) => void,
  ): void {
    // A write the fence refused: this incarnation was superseded (db.ts); retriable elsewhere. A
    // database connection lost mid-request: DATABASE_UNAVAILABLE, retriable.
    const err = fencedAppError(raw) ?? lostConnectionAppError(raw) ?? raw;
    let wire: AppError;
    if (err instanceof AppError) {
      wire = err;
    } else {
      log.error("host.bug", { subject: msg.subject, ...errorFields(err) });
      wire = new AppError("INTERNAL");
    }
    if (wire.code === "INTERNAL")
      log.warn("host.request_failed", { subject: msg.subject, ...errorFields(err) });
    count(endpointSubject, wire.code);
    observed?.(wire.code);
    send(
      msg,
      () =>
        msg.respondError(
          serviceErrorStatus(wire.code),
          oneLine(wire.message).slice(0, 1024),
          errorBody(wire),
          replyOptions(),
        ),
      wire.code,
    );
  }

  /**
   * Sends a reply; one the server would refuse (over its max_payload) or that cannot be sent is
   * logged and replaced by a bounded REPLY_TOO_LARGE error, and the host stays up.
   */
  function send(msg: ServiceMsg, respond: () => unknown, code = "ok"): void {
    try {
      respond();
      // One line per reply, under the request's id (host-bus.ts): what was asked and how it ended.
      // A turn's heartbeats and streamed deltas (several a second) only when they fail.
      if (code !== "ok" || !QUIET_OK.test(msg.subject))
        log.info("host.request_served", { subject: msg.subject, code });
    } catch (err) {
      log.error("host.reply_failed", { subject: msg.subject, ...errorFields(err) });
      try {
        const wire = new AppError(
          "REPLY_TOO_LARGE",
          "the reply could not be sent: it exceeds the bus's message bound",
        );
        msg.respondError(serviceErrorStatus(wire.code), wire.message, errorBody(wire), replyOptions());
      } catch (again) {
        log.error("host.reply_failed", { subject: msg.subject, ...errorFields(again) });
      }
    }
  }

  return {
    /** Runs one request's work and replies exactly once. */
    reply(msg: ServiceMsg, endpointSubject: string, run: () => Promise<unknown>): void {
      const method = observer?.methodOf(msg) ?? "";
      const started = performance.now();
      observer?.request(method);
      const observed = (code: string) => observer?.reply(method, code, (performance.now() - started) / 1000);
      run().then(
        (result) => {
          const refusal = refusalOf(result);
          if (refusal) replyError(msg, endpointSubject, refusalError(refusal), observed);
          else {
            send(msg, () => msg.respond(okReply(okValueOf(result) ?? null), replyOptions()));
            observed("ok");
          }
        },
        (err) => replyError(msg, endpointSubject, err, observed),
      );
    },
    /** The service config's statsHandler: each endpoint's error counts as its stats `data`. */
    async statsHandler(endpoint: Endpoint): Promise<EndpointErrorStats> {
      const s = stats.get(endpoint.subject);
      return { errors: s?.errors ?? 0, codes: { ...s?.codes } };
    },
  };
}
export type Replier = ReturnType<typeof createReplier>;
