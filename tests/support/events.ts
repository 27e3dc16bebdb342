// Type guards for session events (services/protocol/events.ts's union discriminated by `type`): the
// tests find and wait for events with them, so what they get back is already the member named.
import { decodeJson } from "../../services/protocol/envelope.ts";
import type { EventType, SessionEvent } from "../../services/protocol/events.ts";

/** The member of the union with this `type` (`SessionEvent<T>`, in a form a generic `T` narrows to). */
export type EventOf<T extends EventType> = Extract<SessionEvent, { type: T }>;

/**
 * A guard for events of `type` that also pass `pred` (given the narrowed event):
 * `events.all.find(isEvent("message"))`, `events.waitFor(isEvent("plan.changed", (e) => e.action === "submitted"))`.
 */
export function isEvent<T extends EventType>(
  type: T,
  pred: (e: EventOf<T>) => boolean = () => true,
): (e: SessionEvent) => e is EventOf<T> {
  return (e): e is EventOf<T> => e.type === type && pred(e as EventOf<T>);
}

/** The events of `type` among `events`, in order, as that member of the union. */
export function eventsOf<T extends EventType>(events: readonly SessionEvent[], type: T): EventOf<T>[] {
  return events.filter(isEvent(type));
}

/**
 * Whether the host published `e` live only (`live: true`, a bus field outside the event types: a state
 * the session actor only passes through, with no seq or cursor, never stored).
 */
export const isLive = (e: SessionEvent): boolean => "live" in e && e.live === true;

/** A session event as a subscriber receives it on the bus (the host's JSON, trusted as its type). */
export const decodeEvent = (data: Uint8Array): SessionEvent => decodeJson(data) as SessionEvent;
