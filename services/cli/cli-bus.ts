// The CLI's only adapter: one NATS connection, requests through the shared RPC client, and a
// subscription to one session's events with a deadline-bounded `next()`. Nothing else does I/O on the bus.
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { SessionEvent } from "../protocol/events.ts";
import type { ClientMethod, ResultOf } from "../protocol/methods.ts";
import { type ArgsOf, rpcClient } from "../protocol/rpc-client.ts";
import { sessionEventsWildcard } from "../protocol/subjects.ts";
import type { CliConfig } from "./cli-config.ts";
import { CliError } from "./cli-error.ts";
import { parseSessionEvent } from "./session-event.ts";

export interface EventSubscription {
  /** The next event of the session, or null once `deadline` (epoch ms) passes or the subscription closes. */
  next(deadline: number): Promise<SessionEvent | null>;
  close(): void;
}

export interface CliBus {
  /** A client method of the METHODS table, typed by it. */
  call<M extends ClientMethod>(method: M, ...params: ArgsOf<M>): Promise<ResultOf<M>>;
  /** Subscribes and flushes, so every event published after this resolves is delivered. */
  subscribeSession(sessionId: string): Promise<EventSubscription>;
  close(): Promise<void>;
}

const decoder = new TextDecoder();

function sessionSubscription(nc: NatsConnection, config: CliConfig, sessionId: string): EventSubscription {
  const queue: SessionEvent[] = [];
  let wake: (() => void) | null = null;
  let closed = false;
  const sub: Subscription = nc.subscribe(sessionEventsWildcard(config.prefix, config.principal, sessionId), {
    callback: (err, msg) => {
      if (err) {
        closed = true;
      } else {
        const e = parseSessionEvent(
          config.prefix,
          config.principal,
          sessionId,
          msg.subject,
          decoder.decode(msg.data),
        );
        if (e) queue.push(e);
      }
      wake?.();
    },
  });
  return {
    async next(deadline) {
      for (;;) {
        const e = queue.shift();
        if (e) return e;
        const left = deadline - Date.now();
        if (closed || left <= 0) return null;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = null;
      }
    },
    close() {
      closed = true;
      sub.unsubscribe();
      wake?.();
    },
  };
}

/** Connects once per command; a server that cannot be reached is NATS_UNAVAILABLE (local to the CLI). */
export async function connectBus(config: CliConfig): Promise<CliBus> {
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: config.natsUrl,
      name: "pihost-cli",
      ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword ?? "" } : {}),
    });
  } catch (cause) {
    throw new CliError(
      "NATS_UNAVAILABLE",
      `cannot connect to NATS at ${config.natsUrl}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  const rpc = rpcClient({ nc, prefix: config.prefix, principal: config.principal });
  return {
    call: rpc.call,
    async subscribeSession(sessionId) {
      const sub = sessionSubscription(nc, config, sessionId);
      await nc.flush();
      return sub;
    },
    async close() {
      if (!nc.isClosed()) await nc.close();
    },
  };
}
