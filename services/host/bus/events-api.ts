// Client method `events.since` (docs/protocol.md "Events"): the caller's stored session events after
// a caller-wide cursor, so people catch up without JetStream. Merged into the host's client handler map.
import { ok } from "../../protocol/result.ts";
import type { ClientHandlers } from "./request-context.ts";
import type { EventPublisher } from "../sessions/events/event-publisher.ts";
import type { EventStore } from "../store/event-store.ts";

/** Events per page when the caller names no `limit`. */
export const EVENTS_DEFAULT_LIMIT = 100;

export function createEventsApi(deps: { store: Pick<EventStore, "since"> }): ClientHandlers<"events"> {
  const { store } = deps;
  return {
    /**
     * Access is decided now, not when the event was raised: events of sessions the caller owns or
     * approves at this call. A named session the caller may not read was refused by the gate as
     * session.get is (SESSION_NOT_FOUND, FORBIDDEN: gates.ts); without one, other sessions' events
     * are left out.
     */
    "events.since": async (principal, p) =>
      ok(
        await store.since(principal, {
          after: p.after ?? 0,
          ...(p.sessionId ? { sessionId: p.sessionId } : {}),
          limit: p.limit ?? EVENTS_DEFAULT_LIMIT,
        }),
      ),
  };
}

/**
 * The handlers, each replying only after the events it raised are stored and published, never
 * waiting for another session's. For people (`reachServer`, the default) also after those events
 * have reached the server: a subscribed caller that gets a reply has been sent its events first.
 * A worker follows no events, and one session's events keep their order on the event connection
 * whatever its replies do, so worker replies skip that round trip (docs/protocol.md "Events").
 */
export function afterEvents<T extends { [K in keyof T]: (...args: never[]) => Promise<unknown> }>(
  events: Pick<EventPublisher, "flush" | "scoped">,
  handlers: T,
  opts: { reachServer?: boolean } = {},
): T {
  const flushOpts = { reachServer: opts.reachServer ?? true };
  const wrapped: Record<string, (...args: never[]) => Promise<unknown>> = {};
  for (const [name, handler] of Object.entries(handlers) as Array<
    [string, (...args: never[]) => Promise<unknown>]
  >) {
    // Each request in its own scope: its reply waits for the sessions it raised events in, only.
    wrapped[name] = (...args: never[]) =>
      events.scoped(async () => {
        try {
          return await handler(...args);
        } finally {
          await events.flush(flushOpts);
        }
      });
  }
  return wrapped as T;
}
