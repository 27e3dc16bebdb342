// Publishes session events to `<prefix>.evt.<principal>.<sessionId>.<type>` for the owner and every
// approver; the JetStream stream (ensured at start) keeps them so clients can resume.
import type { NatsConnection } from "@nats-io/nats-core";
import { jetstreamManager } from "@nats-io/jetstream";
import { encodeJson } from "../../protocol/envelope.ts";
import type { EventBodies, EventType } from "../../protocol/events.ts";
import { eventSubject, eventWildcard } from "../../protocol/subjects.ts";
import type { Clock } from "../clock.ts";

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
}: {
  nc: NatsConnection;
  prefix: string;
  clock: Clock;
}) {
  return {
    publish<T extends EventType>(to: Audience, type: T, body: EventBodies[T]): void {
      const data = encodeJson({ type, sessionId: to.sessionId, at: clock.date().toISOString(), ...body });
      for (const principal of new Set([to.owner, ...to.approvers])) {
        nc.publish(eventSubject(prefix, principal, to.sessionId, type), data);
      }
    },
  };
}

export type EventPublisher = ReturnType<typeof createEventPublisher>;
