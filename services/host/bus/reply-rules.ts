// Where the host may answer (docs/security.md, "The bus"): a request is served only when its reply
// subject lies under the caller's private inbox prefix, `_INBOX_<caller>.`; in development mode the
// shared `_INBOX.` of clients that set no prefix is answered too. Anything else (no reply subject,
// `$JS.API...`, another person's event subject, a worker's cancel subject, another caller's inbox)
// is not served at all and is audited here, at most REFUSALS_AUDITED_PER_MINUTE rows per caller.
import { errorFields, type Logger } from "../../runtime/log.ts";
import { inboxPrefix, SHARED_INBOX_PREFIX, SUBJECT_TOKEN } from "../../protocol/subjects.ts";
import type { Clock } from "../clock.ts";

export type ReplyRefusal = "no_reply" | "not_an_inbox" | "not_the_callers_inbox";

/** A reply subject's tokens after the inbox prefix: non-empty, no wildcard, no white space. */
const LITERAL_TOKEN = /^[^\s*>]+$/;
/** Longest request or reply subject kept in a log line or an audit row. */
const AUDITED_SUBJECT_CHARS = 256;
export const REFUSALS_AUDITED_PER_MINUTE = 30;

/**
 * Why the host must not answer on `reply`, or null when it may. `caller` is who the request proves
 * to be from: a person's principal (the subject's, which NATS permissions tie to the user) or the
 * worker a claim or a turn's lease names; null when it proves no one (a malformed subject, a token
 * that is not valid), whose refusal may go to any private inbox, since it carries nothing of anyone's.
 */
export function replyRefusal(
  reply: string | undefined,
  caller: string | null,
  devMode: boolean,
): ReplyRefusal | null {
  if (!reply) return "no_reply";
  const tokens = reply.split(".");
  if (tokens.length < 2 || !tokens.slice(1).every((t) => LITERAL_TOKEN.test(t))) return "not_an_inbox";
  const head = tokens[0] ?? "";
  if (devMode && head === SHARED_INBOX_PREFIX) return null;
  const name = head.startsWith(`${SHARED_INBOX_PREFIX}_`) ? head.slice(SHARED_INBOX_PREFIX.length + 1) : "";
  if (!SUBJECT_TOKEN.test(name)) return "not_an_inbox";
  if (caller !== null && head !== inboxPrefix(caller)) return "not_the_callers_inbox";
  return null;
}

export interface RefusedReply {
  subject: string;
  reply: string | undefined;
  caller: string | null;
  reason: ReplyRefusal;
}

/**
 * Records refused replies: a log line each, and an audit row each up to the per-caller bound per
 * minute (a caller flooding the host with them fills no table); the rest are counted in the log.
 */
export function createRefusalRecorder(deps: {
  clock: Clock;
  log: Logger;
  audit: (r: RefusedReply, at: Date) => Promise<void>;
}) {
  let windowStart = 0;
  const counts = new Map<string, number>();
  return (r: RefusedReply): void => {
    const now = deps.clock.now();
    if (now - windowStart >= 60_000) {
      for (const [caller, n] of counts)
        if (n > REFUSALS_AUDITED_PER_MINUTE)
          deps.log.warn("host.replies_refused_unaudited", {
            caller,
            count: n - REFUSALS_AUDITED_PER_MINUTE,
          });
      counts.clear();
      windowStart = now;
    }
    const key = r.caller ?? "";
    const n = (counts.get(key) ?? 0) + 1;
    counts.set(key, n);
    const reply = r.reply?.slice(0, AUDITED_SUBJECT_CHARS);
    const subject = r.subject.slice(0, AUDITED_SUBJECT_CHARS);
    deps.log.warn("host.reply_refused", { subject, reply, caller: r.caller, reason: r.reason });
    if (n > REFUSALS_AUDITED_PER_MINUTE) return;
    void deps
      .audit({ ...r, subject, reply }, deps.clock.date())
      .catch((err) => deps.log.warn("host.reply_refusal_not_audited", errorFields(err)));
  };
}
