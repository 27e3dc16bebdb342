// The console's only adapter: one NATS WebSocket connection with the person's own credentials and
// private inbox prefix, requests through the shared RPC client, and the feed of every readable
// session's events and live output. After a reconnect it catches up with events.since (exactly as
// the CLI does, through session-feed.ts) and then asks for the lists to be re-read: events are hints.
import {
  type ConnectionOptions,
  type NatsConnection,
  type Subscription,
  wsconnect,
} from "@nats-io/nats-core";
import type { SessionEvent } from "../../protocol/events.ts";
import type { ClientMethod, ResultOf } from "../../protocol/methods.ts";
import { type ArgsOf, rpcClient } from "../../protocol/rpc-client.ts";
import { parseFeedMessage, storedSessionEvent } from "../../protocol/session-event.ts";
import { createSessionFeed, type FeedItem } from "../../protocol/session-feed.ts";
import { inboxPrefix, liveSubject, sessionEventsWildcard } from "../../protocol/subjects.ts";
import type { ConnectionState } from "./stores.ts";

/** Events per events.since page while catching up, and the most pages one catch-up reads. */
const CATCH_UP_LIMIT = 500;
const CATCH_UP_MAX_PAGES = 20;

export interface ConsoleBusOptions {
  wsUrl: string;
  prefix: string;
  user: string;
  pass: string;
  /** Every change of the connection's state, with the reason when it is lost. */
  onState(state: ConnectionState, reason?: string | null): void;
  onItem(item: FeedItem): void;
  /** Connected (first time, or after a reconnect's catch-up): re-read what the page shows. */
  onResync(): void;
  /** A server error that does not close the connection (e.g. a permissions violation). */
  onServerError?(message: string): void;
  /** The transport (tests pass a stand-in). */
  connect?: (opts: ConnectionOptions) => Promise<NatsConnection>;
}

export interface ConsoleBus {
  /** The NATS user, which is the principal of every subject. */
  principal: string;
  call<M extends ClientMethod>(method: M, ...params: ArgsOf<M>): Promise<ResultOf<M>>;
  close(): Promise<void>;
}

const decoder = new TextDecoder();

/** One console connection's state and dependencies, which each step below takes explicitly. */
interface ConsoleConnection {
  opts: ConsoleBusOptions;
  principal: string;
  nc: NatsConnection;
  rpc: ReturnType<typeof rpcClient>;
  feed: ReturnType<typeof createSessionFeed>;
  closing: boolean;
}

/** Connects; rejects with the server's reason (wrong password, unreachable, refused origin). */
export async function connectConsole(opts: ConsoleBusOptions): Promise<ConsoleBus> {
  const principal = opts.user;
  opts.onState("connecting");
  const nc = await openConnection(opts, principal);
  const c: ConsoleConnection = {
    opts,
    principal,
    nc,
    rpc: rpcClient({ nc, prefix: opts.prefix, principal }),
    feed: createSessionFeed(),
    closing: false,
  };
  const onMessage = (err: Error | null, msg: { subject: string; data: Uint8Array }) =>
    onFeedMessage(c, err, msg);
  const subs: Subscription[] = [
    nc.subscribe(sessionEventsWildcard(opts.prefix, principal, "*"), { callback: onMessage }),
    nc.subscribe(liveSubject(opts.prefix, principal, "*"), { callback: onMessage }),
  ];
  await nc.flush();
  // Where a catch-up after a reconnect starts: nothing committed from here on is missed.
  await c.rpc
    .call("events.since", { after: "now" })
    .then((r) => c.feed.startAt(r.next))
    .catch(() => {});

  void watchStatus(c);
  void nc.closed().then((err) => {
    opts.onState("disconnected", c.closing ? "signed out" : err ? reasonOf(err) : "the connection closed");
  });

  opts.onState("connected");
  opts.onResync();
  return {
    principal,
    call: c.rpc.call,
    async close() {
      c.closing = true;
      for (const sub of subs) sub.unsubscribe();
      if (!nc.isClosed()) await nc.close();
    },
  };
}

async function openConnection(opts: ConsoleBusOptions, principal: string): Promise<NatsConnection> {
  try {
    return await (opts.connect ?? wsconnect)({
      servers: opts.wsUrl,
      name: "pihost-web",
      user: opts.user,
      pass: opts.pass,
      // Replies come back only under the person's own prefix (docs/security.md, "The bus").
      inboxPrefix: inboxPrefix(principal),
      maxReconnectAttempts: -1,
      reconnectTimeWait: 1_000,
      waitOnFirstConnect: false,
    });
  } catch (cause) {
    opts.onState("disconnected", reasonOf(cause));
    throw cause;
  }
}

function drainFeed(c: ConsoleConnection): void {
  for (let item = c.feed.take(); item; item = c.feed.take()) c.opts.onItem(item);
}

function onFeedMessage(
  c: ConsoleConnection,
  err: Error | null,
  msg: { subject: string; data: Uint8Array },
): void {
  if (err) {
    c.opts.onServerError?.(reasonOf(err));
    return;
  }
  const item = parseFeedMessage(c.opts.prefix, c.principal, null, msg.subject, decoder.decode(msg.data));
  if (item?.type === "delta") c.feed.delta(item);
  else if (item) c.feed.live(item);
  drainFeed(c);
}

async function catchUp(c: ConsoleConnection): Promise<void> {
  const { feed, rpc } = c;
  const from = feed.beginCatchUp();
  try {
    // No position known: nothing to continue from; the re-reads (and a session's history) cover it.
    if (from === null) return;
    let after: string = from;
    for (let page = 0; page < CATCH_UP_MAX_PAGES; page++) {
      const r = await rpc.call("events.since", { after, limit: CATCH_UP_LIMIT });
      feed.fetched(
        r.events
          .map((body) => storedSessionEvent(null, body as Record<string, unknown>))
          .filter((e): e is SessionEvent => e !== null),
        r.next,
      );
      after = r.next;
      if (!r.more) break;
    }
  } catch (err) {
    c.opts.onServerError?.(`catching up failed: ${reasonOf(err)}`);
  } finally {
    feed.endCatchUp();
    drainFeed(c);
  }
}

/** Says each change of the connection's state; after a reconnect, catches up first. */
async function watchStatus(c: ConsoleConnection): Promise<void> {
  const { opts } = c;
  for await (const s of c.nc.status()) {
    if (c.closing) break;
    switch (s.type) {
      case "disconnect":
        opts.onState("reconnecting", "connection lost");
        break;
      case "reconnecting":
        opts.onState("reconnecting", "connection lost; trying again");
        break;
      case "reconnect":
        opts.onState("catching-up");
        await catchUp(c);
        opts.onState("connected");
        opts.onResync();
        break;
      case "error":
        opts.onServerError?.(reasonOf(s.error));
        break;
      default:
        break;
    }
  }
}

/** A person-readable reason from whatever the transport threw (nats.js connection errors often carry no message). */
export function reasonOf(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error && err.cause.message ? ` (${err.cause.message})` : "";
  if (err.message && err.message !== err.name) return `${err.message}${cause}`;
  return `${err.name}${cause}: the server refused the connection or could not be reached; check the URL, and that this page's origin is in the server's websocket allowed_origins`;
}
