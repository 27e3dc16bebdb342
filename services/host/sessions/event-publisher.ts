// Session events: each is first a row (its session's next `seq` and a caller-wide cursor,
// store/event-store.ts), then published to `<prefix>.evt.<principal>.<sessionId>.<type>` for the owner
// and every approver. One session's events are written and published in the order they were raised.
// The JetStream stream (ensured at start) still keeps them for clients that have not moved to
// `events.since` (docs/protocol.md "Events").
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { encodeJson } from "../../protocol/envelope.ts";
import type { EventBodies, EventType } from "../../protocol/events.ts";
import { errorFields, type Logger } from "../../protocol/log.ts";
import { eventSubject, eventWildcard } from "../../protocol/subjects.ts";
import type { Clock } from "../clock.ts";
import { type EventStore, storedBody } from "../store/event-store.ts";

/** Room kept under max_payload for an event's subject and protocol line. */
const EVENT_SLACK_BYTES = 16 * 1024;
/** Longest wait for the server's PONG before a reply goes anyway (a server that is gone gets neither). */
const FLUSH_WAIT_MS = 2_000;
/** Events older than the store's bound are pruned once every this many written events (and at the first). */
const PRUNE_AGE_EVERY = 1_000;

export interface Audience {
  sessionId: string;
  owner: string;
  approvers: string[];
}

export async function ensureEventStream(
  nc: NatsConnection,
  prefix: string,
  streamName: string,
  maxBytes: number,
): Promise<void> {
  const jsm = await jetstreamManager(nc);
  const config = {
    name: streamName,
    subjects: [eventWildcard(prefix)],
    max_age: 7 * 24 * 3600 * 1_000_000_000,
    max_msgs: 1_000_000,
    max_bytes: maxBytes,
  };
  try {
    await jsm.streams.info(streamName);
    await jsm.streams.update(streamName, config);
  } catch {
    await jsm.streams.add(config);
  }
}

export function createEventPublisher({
  nc,
  prefix,
  clock,
  store,
  log,
}: {
  nc: NatsConnection;
  prefix: string;
  clock: Clock;
  store: Pick<EventStore, "append" | "pruneByAge">;
  log: Logger;
}) {
  /** The largest event the server takes, with room for the subject and headers. */
  const maxEventBytes = () => (nc.info?.max_payload ?? 1024 * 1024) - EVENT_SLACK_BYTES;
  /** The last write of each session with one under way: the next one of that session waits for it. */
  const tails = new Map<string, Promise<void>>();
  let written = 0;
  /** Published since the last round trip to the server began; that round trip. */
  let unflushed = false;
  let roundTrip: Promise<void> = Promise.resolve();

  async function writeAndPublish(to: Audience, type: EventType, body: Record<string, unknown>, at: Date) {
    let seq: number;
    let cursor: number;
    let approvers: readonly string[];
    try {
      ({ seq, cursor, approvers } = await store.append(to.sessionId, type, body, at));
    } catch (err) {
      // Events are hints: one that could not be stored (fenced writer, database gone) is not sent,
      // so every event a client sees can be fetched again by its cursor.
      log.error("host.event_not_stored", { sessionId: to.sessionId, type, ...errorFields(err) });
      return;
    }
    // The envelope fields last: no body field overrides them. An event the server would refuse
    // goes out in its stored form (short fields and `truncated`, event-store.ts).
    const envelope = { type, sessionId: to.sessionId, at: at.toISOString(), seq, cursor };
    let data = encodeJson({ ...body, ...envelope });
    if (data.byteLength > maxEventBytes())
      data = encodeJson({ ...JSON.parse(storedBody(body).json), ...envelope });
    // The approvers as the store read them with the event (members now), not as the caller cached them.
    for (const principal of new Set([to.owner, ...approvers])) {
      if (!principal) continue;
      try {
        nc.publish(eventSubject(prefix, principal, to.sessionId, type), data);
      } catch (err) {
        // Stored already: the client fetches it with events.since.
        log.error("host.event_publish_failed", { sessionId: to.sessionId, type, seq, ...errorFields(err) });
      }
    }
    unflushed = true;
    if (written++ % PRUNE_AGE_EVERY === 0) {
      void store
        .pruneByAge()
        .then((removed) => log.info("host.events_pruned", { removed }))
        .catch((err) => log.warn("host.events_prune_failed", errorFields(err)));
    }
  }

  return {
    /** Raises an event: stored, then published, after the session's earlier events; never throws. */
    publish<T extends EventType>(to: Audience, type: T, body: EventBodies[T]): void {
      const at = clock.date();
      const previous = tails.get(to.sessionId) ?? Promise.resolve();
      const tail = previous.then(() => writeAndPublish(to, type, body as Record<string, unknown>, at));
      tails.set(to.sessionId, tail);
      void tail.finally(() => {
        if (tails.get(to.sessionId) === tail) tails.delete(to.sessionId);
      });
    },
    /**
     * Resolves when every event raised before this call is stored and published (or logged as not
     * stored) and has reached the server; events raised meanwhile are not waited for, so a busy
     * host never keeps it waiting.
     */
    async flush(): Promise<void> {
      await Promise.all([...tails.values()]);
      // Replies leave on the host's serving connection, events on this one: a round trip here
      // (PING/PONG) means the server has routed every event before the reply is even sent.
      if (unflushed) {
        unflushed = false;
        roundTrip = Promise.race([
          nc.flush().catch(() => {}),
          new Promise<void>((resolve) => setTimeout(resolve, FLUSH_WAIT_MS).unref()),
        ]);
      }
      await roundTrip;
    },
  };
}

export type EventPublisher = ReturnType<typeof createEventPublisher>;
