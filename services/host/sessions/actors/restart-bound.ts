// How often one session's actor may fail before the session is degraded (SESSION_DEGRADED): more
// than `maxRestarts` failures within `restartWindowMs` degrade it until the host restarts (in memory
// on purpose: a host restart runs the fence, which ends whatever a degraded session held).
import { AppError } from "../../../protocol/app-error.ts";
import type { Clock } from "../../clock.ts";

/** A session whose actor failed past the restart bound: refused until the host restarts. */
export interface DegradedSession {
  sessionId: string;
  failures: number;
  since: string;
}

export function createRestartBound(deps: { clock: Clock; maxRestarts: number; restartWindowMs: number }) {
  const { clock, maxRestarts, restartWindowMs } = deps;
  /** Host-clock times of recent actor failures per session (within restartWindowMs). */
  const failures = new Map<string, number[]>();
  const degraded = new Map<string, DegradedSession>();
  return {
    /** The bound, as the logs name it. */
    limits: { maxRestarts, restartWindowMs },
    /** Counts one failure: the session's recent failures, or the session now degraded. */
    failed(sessionId: string): { degraded: DegradedSession } | { recent: number } {
      const now = clock.now();
      const recent = (failures.get(sessionId) ?? []).filter((t) => now - t < restartWindowMs);
      recent.push(now);
      if (recent.length <= maxRestarts) {
        failures.set(sessionId, recent);
        return { recent: recent.length };
      }
      const d: DegradedSession = { sessionId, failures: recent.length, since: clock.date().toISOString() };
      degraded.set(sessionId, d);
      failures.delete(sessionId);
      return { degraded: d };
    },
    isDegraded: (sessionId: string) => degraded.has(sessionId),
    /** SESSION_DEGRADED for a degraded session (its failures and since when), else nothing. */
    refusal(sessionId: string): AppError | null {
      const d = degraded.get(sessionId);
      if (!d) return null;
      return new AppError(
        "SESSION_DEGRADED",
        `the session's actor failed ${d.failures} times within ${restartWindowMs} ms; it refuses requests until the host restarts`,
        { details: { failures: d.failures, since: d.since } },
      );
    },
    /** Failures counted and whether the session is degraded (the actor.fault test hook). */
    count(sessionId: string): { failures: number; degraded: boolean } {
      const d = degraded.get(sessionId);
      return { failures: d?.failures ?? failures.get(sessionId)?.length ?? 0, degraded: !!d };
    },
    degraded: () => [...degraded.values()],
    /** Forgets failures older than the window. */
    sweep(): void {
      const now = clock.now();
      for (const [sessionId, times] of failures) {
        if (times.every((t) => now - t >= restartWindowMs)) failures.delete(sessionId);
      }
    },
  };
}
export type RestartBound = ReturnType<typeof createRestartBound>;
