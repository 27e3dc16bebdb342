// A small request/reply client over the bus contract, shared by the CLI, the agent worker and tests.
import type { NatsConnection } from "@nats-io/nats-core";
import { AppError } from "./app-error.ts";
import { encodeJson, unwrapReply } from "./envelope.ts";
import { type AgentMethod, agentSubject, rpcSubject } from "./subjects.ts";

export interface RpcClientOptions {
  nc: NatsConnection;
  prefix: string;
  timeoutMs?: number;
}

async function request<T>(nc: NatsConnection, subject: string, params: unknown, timeout: number): Promise<T> {
  let msg: Awaited<ReturnType<NatsConnection["request"]>>;
  try {
    msg = await nc.request(subject, encodeJson(params), { timeout });
  } catch (cause) {
    throw new AppError("INTERNAL", `no reply on ${subject}: ${(cause as Error).message}`, {
      cause,
      details: { transport: true },
    });
  }
  return unwrapReply<T>(msg.data);
}

/** Client methods as a principal: `<prefix>.rpc.<principal>.<method>`. */
export function createRpcClient(opts: RpcClientOptions & { principal: string }) {
  const timeout = opts.timeoutMs ?? 10_000;
  return {
    principal: opts.principal,
    call<T = unknown>(method: string, params: unknown = {}): Promise<T> {
      return request<T>(opts.nc, rpcSubject(opts.prefix, opts.principal, method), params, timeout);
    },
  };
}
export type RpcClient = ReturnType<typeof createRpcClient>;

/** Agent-worker methods: `<prefix>.agent.<method>`. */
export function createAgentClient(opts: RpcClientOptions) {
  const timeout = opts.timeoutMs ?? 30_000;
  return {
    call<T = unknown>(method: AgentMethod, params: unknown): Promise<T> {
      return request<T>(opts.nc, agentSubject(opts.prefix, method), params, timeout);
    },
  };
}
export type AgentClient = ReturnType<typeof createAgentClient>;
