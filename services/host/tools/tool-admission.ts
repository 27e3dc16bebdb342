// Admission control of `tools.execute` (docs/architecture.md "Tools"): bounded concurrency, global
// (PI_TOOLS_MAX_CONCURRENT) and per session (PI_TOOLS_MAX_PER_SESSION).
import { AppError } from "../../protocol/app-error.ts";

export interface ToolAdmission {
  /** Takes a slot for one call of the session, or throws HOST_OVERLOADED. Returns its release. */
  admit(sessionId: string): () => void;
  /** Slots held: all, or of one session. */
  inUse(sessionId?: string): number;
}

/**
 * A call over either bound is refused at once with HOST_OVERLOADED (retriable): it is not run, not
 * recorded and not audited, so the worker may retry the same toolCallId later. A slot is held from
 * admission until the call's reply, including the time a call waits on a permission prompt (up to
 * PI_PERMISSION_TIMEOUT_MS). A retry of a call already in flight (same turnId + toolCallId) is
 * coalesced before admission, so it never takes a second slot.
 */
export function createToolAdmission(limits: { maxConcurrent: number; maxPerSession: number }): ToolAdmission {
  let total = 0;
  const perSession = new Map<string, number>();
  return {
    admit(sessionId) {
      const mine = perSession.get(sessionId) ?? 0;
      if (total >= limits.maxConcurrent)
        throw new AppError("HOST_OVERLOADED", "too many tool calls are running on this host; retry later", {
          details: { limit: "global", max: limits.maxConcurrent },
        });
      if (mine >= limits.maxPerSession)
        throw new AppError(
          "HOST_OVERLOADED",
          "too many tool calls of this session are running; retry later",
          {
            details: { limit: "session", max: limits.maxPerSession },
          },
        );
      total++;
      perSession.set(sessionId, mine + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        total--;
        const left = (perSession.get(sessionId) ?? 1) - 1;
        if (left > 0) perSession.set(sessionId, left);
        else perSession.delete(sessionId);
      };
    },
    inUse: (sessionId) => (sessionId === undefined ? total : (perSession.get(sessionId) ?? 0)),
  };
}
