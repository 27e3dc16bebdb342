// A small request/reply client over the bus contract, shared by the CLI, the agent worker and tests.
// rpcClient/agentClient are typed by the METHODS table; each has one unchecked path, `raw(method, body)`,
// for the tests that send malformed or hostile input on purpose (and bounded-call.ts's body parts).
import { headers, type NatsConnection } from "@nats-io/nats-core";
import type { AgentHello } from "./agent-schemas.ts";
import { AppError } from "./app-error.ts";
import { encodeJson, unwrapReply } from "./envelope.ts";
import type { AgentMethod, ClientMethod, Method, ParamsOf, ResultOf } from "./methods.ts";
import {
  agentSubject,
  PROTOCOL_VERSION,
  rpcSubject,
  workerGoodbyeSubject,
  workerHostSubject,
} from "./subjects.ts";

export interface RpcClientOptions {
  nc: NatsConnection;
  prefix: string;
  timeoutMs?: number;
  /** Sent as the `Pi-Request-Id` header: one id, or (the worker) the id of the work under way, if any. */
  requestId?: string | (() => string | undefined);
}

/** The header a request id travels in: requests, their replies, turn offers, plugin calls. */
export const REQUEST_ID_HEADER = "Pi-Request-Id";
/**
 * How long the caller waits for this reply (ms), sent with every request: a host that forwards the
 * request to the session's owner waits that long, never a fixed time of its own (bus/forward.ts).
 */
export const TIMEOUT_HEADER = "Pi-Timeout-Ms";
/** What a caller's request id may be; the host replaces anything else by one it makes. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;

/** The id a caller passed when it is well-formed, else null (a label only, never trusted for more). */
export function acceptRequestId(raw: unknown): string | null {
  return typeof raw === "string" && REQUEST_ID_PATTERN.test(raw) ? raw : null;
}

/** The request id of an error a reply carried (its reply's `Pi-Request-Id` header), when known. */
const errorRequestIds = new WeakMap<object, string>();
export function requestIdOfError(err: unknown): string | undefined {
  return typeof err === "object" && err !== null ? errorRequestIds.get(err) : undefined;
}

/** The params argument: optional when the method takes an empty object. */
export type ArgsOf<M extends Method> =
  Record<never, never> extends ParamsOf<M> ? [params?: ParamsOf<M>] : [params: ParamsOf<M>];

async function request<T>(
  nc: NatsConnection,
  subject: string,
  params: unknown,
  timeout: number,
  requestIdOpt: RpcClientOptions["requestId"],
): Promise<T> {
  const requestId = typeof requestIdOpt === "function" ? requestIdOpt() : requestIdOpt;
  const h = headers();
  h.set(TIMEOUT_HEADER, String(timeout));
  if (requestId !== undefined) h.set(REQUEST_ID_HEADER, requestId);
  let msg: Awaited<ReturnType<NatsConnection["request"]>>;
  try {
    msg = await nc.request(subject, encodeJson(params), { timeout, headers: h });
  } catch (cause) {
    // No host subscribed at all (every host stopped or not started): retriable, and said as such.
    if ((cause as { isNoResponders?: () => boolean }).isNoResponders?.() === true)
      throw new AppError("HOST_UNAVAILABLE", `no host answers on ${subject}`, {
        cause,
        details: { transport: true, noResponders: true },
      });
    throw new AppError("INTERNAL", `no reply on ${subject}: ${(cause as Error).message}`, {
      cause,
      details: { transport: true },
    });
  }
  try {
    return unwrapReply<T>(msg.data);
  } catch (err) {
    const replyId = msg.headers?.get(REQUEST_ID_HEADER);
    if (replyId && typeof err === "object" && err !== null) errorRequestIds.set(err, replyId);
    throw err;
  }
}

/** Client methods as a principal, `<prefix>.rpc.<principal>.<method>`, typed by the METHODS table. */
export function rpcClient(opts: RpcClientOptions & { principal: string }) {
  const timeout = opts.timeoutMs ?? 10_000;
  const raw = <T = unknown>(method: string, params: unknown = {}): Promise<T> =>
    request<T>(opts.nc, rpcSubject(opts.prefix, opts.principal, method), params, timeout, opts.requestId);
  return {
    principal: opts.principal,
    /** A client method of the table: an unknown method or wrong params do not compile. */
    call<M extends ClientMethod>(method: M, ...params: ArgsOf<M>): Promise<ResultOf<M>> {
      return raw<ResultOf<M>>(method, params[0] ?? {});
    },
    /** Any method name and body, unchecked (tests of refusals and unknown methods). */
    raw,
  };
}
export type TypedRpcClient = ReturnType<typeof rpcClient>;

/**
 * Agent-worker methods, typed by the METHODS table: `to(host)` sends them to that host's own subjects
 * (`<prefix>.agent.host.<host>.<method>`, the host a turn's offer and claim name); `hello` and
 * `goodbye` announce the worker to every host.
 */
export function agentClient(opts: RpcClientOptions) {
  const timeout = opts.timeoutMs ?? 30_000;
  const to = (host: string) => {
    const raw = <T = unknown>(method: string, params: unknown): Promise<T> =>
      request<T>(
        opts.nc,
        workerHostSubject(opts.prefix, host, method as AgentMethod),
        params,
        timeout,
        opts.requestId,
      );
    return {
      host,
      call<M extends AgentMethod>(method: M, params: ParamsOf<M>): Promise<ResultOf<M>> {
        return raw<ResultOf<M>>(method, params);
      },
      /** Any agent method name and body, unchecked. */
      raw,
    };
  };
  return {
    to,
    /** Announces a worker and what it serves; the host re-publishes waiting offers (docs/protocol.md, step 1). */
    hello(workerId: string, serves?: AgentHello["serves"]): void {
      const body: AgentHello = { workerId, protocolVersion: PROTOCOL_VERSION, ...(serves ? { serves } : {}) };
      opts.nc.publish(agentSubject(opts.prefix, "hello"), encodeJson(body));
    },
    /** The worker stops: every host drops it from workers.list and models.list at once. */
    goodbye(workerId: string): void {
      opts.nc.publish(workerGoodbyeSubject(opts.prefix, workerId), encodeJson({ workerId }));
    },
  };
}
/** The agent-worker methods of one host (`agentClient(...).to(host)`). */
export type TypedAgentClient = ReturnType<ReturnType<typeof agentClient>["to"]>;
