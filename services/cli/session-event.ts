// Decodes one message of `<prefix>.evt.<principal>.<sessionId>.<type>` into a SessionEvent. Pure;
// the type comes from the subject (types contain dots), a body that is not a JSON object is dropped.
import { EVENT_TYPES, type EventType, type SessionEvent } from "../protocol/events.ts";
import { sessionEventsWildcard } from "../protocol/subjects.ts";

export function eventTypeFromSubject(
  prefix: string,
  principal: string,
  sessionId: string,
  subject: string,
): string | null {
  const head = sessionEventsWildcard(prefix, principal, sessionId).slice(0, -1); // drop the trailing ">"
  if (!subject.startsWith(head) || subject.length === head.length) return null;
  return subject.slice(head.length);
}

/** An event of one session as `events.since` returned it; another session's or an unknown type: null. */
export function storedSessionEvent(sessionId: string, body: Record<string, unknown>): SessionEvent | null {
  if (body.sessionId !== sessionId || typeof body.type !== "string") return null;
  if (!(EVENT_TYPES as string[]).includes(body.type)) return null;
  return body as SessionEvent;
}

/** Known event types only; unknown ones (a newer host) are skipped rather than misread. */
export function parseSessionEvent(
  prefix: string,
  principal: string,
  sessionId: string,
  subject: string,
  body: string,
): SessionEvent | null {
  const type = eventTypeFromSubject(prefix, principal, sessionId, subject);
  if (type === null || !(EVENT_TYPES as string[]).includes(type)) return null;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  return { ...(value as Record<string, unknown>), type: type as EventType, sessionId } as SessionEvent;
}
