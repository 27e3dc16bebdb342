// The CLI's only adapter: one NATS connection, requests through the shared RPC client, and a
// subscription to one session's (or every readable session's) events and live output with a
// deadline-bounded `next()` that catches up after a reconnect (events.since). Nothing else does
// I/O on the bus.
import { connect, type Msg, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import type { SessionEvent } from "../protocol/events.ts";
import type { ClientMethod, ResultOf } from "../protocol/methods.ts";
import { type ArgsOf, rpcClient } from "../protocol/rpc-client.ts";
import { inboxPrefix, liveSubject, sessionEventsWildcard } from "../protocol/subjects.ts";
import type { CliConfig } from "./cli-config.ts";
import { CliError } from "./cli-error.ts";
import { parseFeedMessage, storedSessionEvent } from "../protocol/session-event.ts";
import { createSessionFeed, type FeedItem } from "../protocol/session-feed.ts";

export interface EventSubscription {
  /** The next event or live delta, or null once `deadline` (epoch ms) passes or the subscription closes. */
  next(deadline: number): Promise<FeedItem | null>;
  close(): void;
}

export interface CliBus {
  /** A client method of the METHODS table, typed by it. */
  call<M extends ClientMethod>(method: M, ...params: ArgsOf<M>): Promise<ResultOf<M>>;
  /**
   * The events and live output of one session, or of every session the caller may read (null).
   * Subscribes and flushes, so every event published after this resolves is delivered.
   */
  subscribe(sessionId: string | null): Promise<EventSubscription>;
  close(): Promise<void>;
}

const decoder = new TextDecoder();

/** Events per `events.since` page while catching up. */
const CATCH_UP_LIMIT = 500;

type SincePage = { events: Array<Record<string, unknown>>; next: string; more: boolean };
/** Where `events.since` continues: 0 (the oldest kept), "now", or a page's `next`. */
type SinceAfter = 0 | "now" | string;

/**
 * Events (and live deltas) of one session or all: subscribed first, then a position read
 * (`events.since` "now"); after every reconnect, what was published meanwhile is fetched with
 * `events.since` from the last page position, and duplicates are dropped by `seq` (session-feed.ts). Events are hints: the commands re-read state when they need it.
 */
function feedSubscription(
  nc: NatsConnection,
  config: CliConfig,
  sessionId: string | null,
  since: (after: SinceAfter) => Promise<SincePage>,
): EventSubscription & { start(): Promise<void> } {
  const feed = createSessionFeed();
  let wake: (() => void) | null = null;
  let closed = false;
  const scope = sessionId ?? "*"; // one token: every session of the principal
  const onMessage = (err: Error | null, msg: Msg) => {
    if (err) {
      closed = true;
    } else {
      const item = parseFeedMessage(
        config.prefix,
        config.principal,
        sessionId,
        msg.subject,
        decoder.decode(msg.data),
      );
      if (item?.type === "delta") feed.delta(item);
      else if (item) feed.live(item);
    }
    wake?.();
  };
  const subs: Subscription[] = [
    nc.subscribe(sessionEventsWildcard(config.prefix, config.principal, scope), { callback: onMessage }),
    nc.subscribe(liveSubject(config.prefix, config.principal, scope), { callback: onMessage }),
  ];
  async function catchUp(): Promise<void> {
    // No position read yet (the first read failed): from the oldest kept, deduplicated by seq.
    let after: SinceAfter = feed.beginCatchUp() ?? 0;
    try {
      for (;;) {
        const page = await since(after);
        feed.fetched(
          page.events
            .map((body) => storedSessionEvent(sessionId, body))
            .filter((e): e is SessionEvent => e !== null),
          page.next,
        );
        after = page.next;
        if (!page.more) break;
      }
    } catch {
      // Not fetched now: the follow goes on with what arrives live (and its own deadline).
    } finally {
      feed.endCatchUp();
      wake?.();
    }
  }
  const status = nc.status();
  void (async () => {
    for await (const s of status) {
      if (closed) break;
      if (s.type === "reconnect") await catchUp();
    }
  })();
  return {
    /** The position to catch up from later: read once, right after subscribing. */
    async start() {
      try {
        feed.startAt((await since("now")).next);
      } catch {
        // Not known: a catch-up then reads from the oldest event kept.
      }
    },
    async next(deadline) {
      for (;;) {
        const e = feed.take();
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
      for (const sub of subs) sub.unsubscribe();
      (status as { stop?: () => void }).stop?.();
      wake?.();
    },
  };
}

/**
 * Connects once per command; a server that cannot be reached is NATS_UNAVAILABLE (local to the CLI).
 * `requestId` (`--request-id`) goes with every request of the command as its `Pi-Request-Id`.
 */
export async function connectBus(config: CliConfig & { requestId?: string }): Promise<CliBus> {
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: config.natsUrl,
      name: "pihost-cli",
      // Replies come back only under the caller's own prefix (docs/security.md, "The bus").
      inboxPrefix: inboxPrefix(config.principal),
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
  const rpc = rpcClient({
    nc,
    prefix: config.prefix,
    principal: config.principal,
    ...(config.requestId !== undefined ? { requestId: config.requestId } : {}),
  });
  return {
    call: rpc.call,
    async subscribe(sessionId) {
      const sub = feedSubscription(nc, config, sessionId, (after) =>
        rpc.call("events.since", {
          ...(sessionId !== null ? { sessionId } : {}),
          after,
          limit: CATCH_UP_LIMIT,
        }),
      );
      await nc.flush();
      await sub.start();
      return sub;
    },
    async close() {
      if (!nc.isClosed()) await nc.close();
    },
  };
}
