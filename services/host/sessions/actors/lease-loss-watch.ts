// A session whose write was refused SESSION_LEASE_LOST is owned by another host now: the supervisor
// drops its actor (session-supervisor.ts). This wraps the actor's steps so that every such refusal is
// reported, even one the machine handles itself.
import { isLeaseLost } from "../../store/db.ts";

/**
 * The steps, each of whose failures with SESSION_LEASE_LOST (PH002) is reported with its session
 * (the first argument: the session id, or a context carrying it), so the supervisor drops the actor
 * even when the machine handles the error itself (a deadline's write, say).
 */
export function watchLeaseLoss<S extends object>(steps: S, onLost: (sessionId: string) => void): S {
  const sessionOf = (arg: unknown): string | null =>
    typeof arg === "string"
      ? arg
      : typeof (arg as { sessionId?: unknown } | null)?.sessionId === "string"
        ? (arg as { sessionId: string }).sessionId
        : null;
  return new Proxy(steps, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        const r = value.apply(target, args);
        if (r instanceof Promise)
          r.catch((err: unknown) => {
            const sessionId = sessionOf(args[0]);
            if (sessionId && isLeaseLost(err)) onLost(sessionId);
          });
        return r;
      };
    },
  });
}
