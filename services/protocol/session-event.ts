// Decodes the messages a follower (the CLI, the web console) subscribes to: `<prefix>.evt.<principal>.<sessionId>.<type>` into
// a SessionEvent and `<prefix>.live.<principal>.<sessionId>.delta` into a LiveDelta. Pure; the
// session and type come from the subject (types contain dots), a body that is not a JSON object is
// dropped, and so is anything of another principal or prefix.
import { EVENT_TYPES, type EventType, type SessionEvent } from "./events.ts";
import type { FeedItem, LiveDelta } from "./session-feed.ts";

/** `{sessionId, rest}` of `<head><sessionId>.<rest>`, or null. */
function splitSubject(head: string, subject: string): { sessionId: string; rest: string } | null {
  if (!subject.startsWith(head)) return null;
  const tail = subject.slice(head.length);
  const dot = tail.indexOf(".");
  if (dot <= 0 || dot === tail.length - 1) return null;
  return { sessionId: tail.slice(0, dot), rest: tail.slice(dot + 1) };
}

export function eventTypeFromSubject(
  prefix: string,
  principal: string,
  sessionId: string,
  subject: string,
): string | null {
  const s = splitSubject(`${prefix}.evt.${principal}.`, subject);
  return s !== null && s.sessionId === sessionId ? s.rest : null;
}

/** An event of one session as `events.since` returned it; another session's or an unknown type: null. */
export function storedSessionEvent(
  sessionId: string | null,
  body: Record<string, unknown>,
): SessionEvent | null {
  if (typeof body.sessionId !== "string" || typeof body.type !== "string") return null;
  if (sessionId !== null && body.sessionId !== sessionId) return null;
  if (!(EVENT_TYPES as string[]).includes(body.type)) return null;
  // The body is the host's stored event, shaped by its (known) type.
  return body as unknown as SessionEvent;
}

function jsonObject(body: string): Record<string, unknown> | null {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return null;
  }
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : null;
}

/** Known event types only; unknown ones (a newer host) are skipped rather than misread. */
export function parseSessionEvent(
  prefix: string,
  principal: string,
  sessionId: string | null,
  subject: string,
  body: string,
): SessionEvent | null {
  const s = splitSubject(`${prefix}.evt.${principal}.`, subject);
  if (s === null || (sessionId !== null && s.sessionId !== sessionId)) return null;
  if (!(EVENT_TYPES as string[]).includes(s.rest)) return null;
  const value = jsonObject(body);
  if (value === null) return null;
  return { ...value, type: s.rest as EventType, sessionId: s.sessionId } as SessionEvent;
}

/** A live delta with at least one well-formed chunk, or null. */
export function parseLiveDelta(
  prefix: string,
  principal: string,
  sessionId: string | null,
  subject: string,
  body: string,
): LiveDelta | null {
  const s = splitSubject(`${prefix}.live.${principal}.`, subject);
  if (s === null || s.rest !== "delta" || (sessionId !== null && s.sessionId !== sessionId)) return null;
  const value = jsonObject(body);
  if (value === null || typeof value.turnId !== "string" || !Array.isArray(value.chunks)) return null;
  const chunks = value.chunks.filter(
    (c): c is LiveDelta["chunks"][number] =>
      typeof c === "object" &&
      c !== null &&
      typeof (c as { text?: unknown }).text === "string" &&
      ["text", "thinking", "toolCall"].includes((c as { kind?: unknown }).kind as string),
  );
  if (chunks.length === 0) return null;
  return {
    type: "delta",
    sessionId: s.sessionId,
    turnId: value.turnId,
    chunks,
    ...(typeof value.dropped === "number" ? { dropped: value.dropped } : {}),
  };
}

/** Either kind of message a follower receives. */
export function parseFeedMessage(
  prefix: string,
  principal: string,
  sessionId: string | null,
  subject: string,
  body: string,
): FeedItem | null {
  return subject.startsWith(`${prefix}.live.`)
    ? parseLiveDelta(prefix, principal, sessionId, subject, body)
    : parseSessionEvent(prefix, principal, sessionId, subject, body);
}
