// Client method `events.since` (docs/protocol.md "Events"): the caller's stored session events after
// a caller-wide cursor, so people catch up without JetStream. Merged into the host's client handler map.
import { decodeParams, EventsSinceParams } from "../../protocol/schemas.ts";
import type { EventsMethod } from "../../protocol/methods.ts";
import type { ClientHandler } from "./client-api.ts";
import type { EventPublisher } from "../sessions/event-publisher.ts";
import type { EventStore } from "../store/event-store.ts";
import type { SessionStore } from "../store/session-store.ts";

/** Events per page when the caller names no `limit`. */
export const EVENTS_DEFAULT_LIMIT = 100;

export function createEventsApi(deps: {
  sessions: Pick<SessionStore, "accessibleRow">;
  store: Pick<EventStore, "since">;
}): Record<EventsMethod, ClientHandler> {
  const { sessions, store } = deps;
  return {
    /**
     * Access is decided now, not when the event was raised: events of sessions the caller owns or
     * approves at this call. A named session the caller may not read is refused as session.get
     * refuses it (SESSION_NOT_FOUND, FORBIDDEN); without one, other sessions' events are left out.
     */
    "events.since": async (principal, params) => {
      const p = decodeParams(EventsSinceParams, params);
      if (p.sessionId) {
        const access = await sessions.accessibleRow(principal, p.sessionId);
        if (!access.ok) return access;
      }
      return store.since(principal, {
        after: p.after ?? 0,
        ...(p.sessionId ? { sessionId: p.sessionId } : {}),
        limit: p.limit ?? EVENTS_DEFAULT_LIMIT,
      });
    },
  };
}

/**
 * The handlers, each replying only after the events it raised are stored and published: a caller
 * that gets a reply has been sent its events first, never waiting for another session's. Wraps the
 * client and the agent handler maps alike.
 */
export function afterEvents<H extends (...args: never[]) => Promise<unknown>>(
  events: Pick<EventPublisher, "flush" | "scoped">,
  handlers: Record<string, H>,
): Record<string, H> {
  const wrapped: Record<string, H> = {};
  for (const [name, handler] of Object.entries(handlers)) {
    // Each request in its own scope: its reply waits for the sessions it raised events in, only.
    wrapped[name] = ((...args: Parameters<H>) =>
      events.scoped(async () => {
        try {
          return await handler(...args);
        } finally {
          await events.flush();
        }
      })) as H;
  }
  return wrapped;
}
