// Which hosts are alive (docs/architecture.md "Several hosts"): each host increments its own
// `hosts.heartbeat` counter; an observer declares a host dead when that counter has not moved for a
// lease measured on the observer's own clock, never by comparing timestamps another host wrote (its
// clock may be skewed). A `stopped` host (clean shutdown) is dead at once. The pure core is
// `createLivenessObserver`; the rest reads and writes the rows and runs the timer.
import { errorFields, type Logger } from "../../runtime/log.ts";
import type { Clock, TimerHandle } from "../clock.ts";
import type { Db } from "./db.ts";
import type { HostState } from "./session-leases.ts";

export interface HostRow {
  id: string;
  heartbeat: number;
  state: HostState;
}

/** A host the observer declares dead, with the counter it saw (the takeover re-checks it). */
export interface DeadHost {
  id: string;
  heartbeat: number;
  state: HostState;
}

/**
 * The observer: fed every row of `hosts` and its own clock's `now` at each tick, it returns the
 * hosts that are dead. A running host is dead once its counter stayed the same for at least
 * `leaseMs` on this clock AND across at least `minObservations` ticks (so a jump of this host's own
 * clock never kills a live peer at once). A host first seen, or whose counter moved, starts afresh.
 * `dead` rows (already taken over) and the observer's own row are never returned.
 */
export function createLivenessObserver(opts: { selfId: string; leaseMs: number; minObservations?: number }) {
  const minObservations = opts.minObservations ?? 1;
  const seen = new Map<string, { heartbeat: number; since: number; unchanged: number }>();
  return {
    observe(rows: readonly HostRow[], now: number): DeadHost[] {
      const dead: DeadHost[] = [];
      const present = new Set<string>();
      for (const row of rows) {
        present.add(row.id);
        if (row.id === opts.selfId || row.state === "dead") {
          seen.delete(row.id);
          continue;
        }
        const s = seen.get(row.id);
        if (!s || s.heartbeat !== row.heartbeat) {
          seen.set(row.id, { heartbeat: row.heartbeat, since: now, unchanged: 0 });
          if (row.state === "stopped") dead.push({ ...row });
          continue;
        }
        s.unchanged += 1;
        if (row.state === "stopped") dead.push({ ...row });
        else if (now - s.since >= opts.leaseMs && s.unchanged >= minObservations) dead.push({ ...row });
      }
      for (const id of seen.keys()) if (!present.has(id)) seen.delete(id);
      return dead;
    },
  };
}

export type LivenessObserver = ReturnType<typeof createLivenessObserver>;

/** PI_HOST_LEASE_MS (default 15000) and PI_HOST_HEARTBEAT_MS (default 2000), heartbeat < lease. */
export function hostLivenessConfig(env: NodeJS.ProcessEnv): {
  leaseMs: number;
  heartbeatMs: number;
} {
  const int = (name: string, fallback: number) => {
    const raw = env[name];
    if (raw === undefined || raw === "") return fallback;
    const n = Number(raw);
    if (!Number.isInteger(n) || n <= 0)
      throw new Error(`${name} must be a positive integer (ms), not ${raw}`);
    return n;
  };
  const leaseMs = int("PI_HOST_LEASE_MS", 15_000);
  const heartbeatMs = int("PI_HOST_HEARTBEAT_MS", 2_000);
  if (heartbeatMs >= leaseMs)
    throw new Error(`PI_HOST_HEARTBEAT_MS (${heartbeatMs}) must be less than PI_HOST_LEASE_MS (${leaseMs})`);
  return { leaseMs, heartbeatMs };
}

/** Every host row, as the observer reads it. */
export async function readHostRows(db: Db): Promise<HostRow[]> {
  const r = await db.query("SELECT id, heartbeat, state FROM hosts ORDER BY id");
  return r.rows.map((row: { id: string; heartbeat: string | number; state: HostState }) => ({
    id: row.id,
    heartbeat: Number(row.heartbeat),
    state: row.state,
  }));
}

/**
 * One heartbeat: this incarnation's counter goes up by one. False when the row no longer names this
 * incarnation as running (another process took the id, or a takeover declared this host dead, or it
 * is stopping): the caller stops serving.
 */
export async function beat(db: Db, p: { hostId: string; incarnation: number; at: Date }): Promise<boolean> {
  const r = await db.query(
    `UPDATE hosts SET heartbeat = heartbeat + 1, heartbeat_at = $3
      WHERE id = $1 AND incarnation = $2 AND state = 'running'`,
    [p.hostId, p.incarnation, p.at],
  );
  return (r.rowCount ?? 0) === 1;
}

/**
 * The host's liveness loop, a timer on the host clock every heartbeatMs: beats (a failed beat is
 * logged and tried again at the next tick, never fatal), then, unless a previous round is still
 * running, reads the other hosts, feeds the observer and hands each dead one to `onDead` (the
 * takeover), one after the other. `onSuperseded` is called once when the row no longer names this
 * incarnation.
 */
export function startHostLiveness(deps: {
  db: Db;
  clock: Clock;
  hostId: string;
  incarnation: number;
  leaseMs: number;
  heartbeatMs: number;
  log: Logger;
  onDead: (host: DeadHost) => Promise<void>;
  onSuperseded: () => void;
  /**
   * This host may have been taken over: its row no longer names it (superseded), or no beat of
   * its own has committed for a whole lease of real time (it was paused or cut off, and the others
   * may have declared it dead). Called before anything else is done about it, at most once until a
   * beat commits again: the host kills what it runs (main.ts).
   */
  onInDoubt?: (reason: "superseded" | "no_heartbeat") => void;
  /** Real elapsed time (ms), not the host clock a test may move: performance.now by default. */
  realNow?: () => number;
}): { stop(): void; tick(): Promise<void> } {
  const { db, clock, hostId, incarnation, log } = deps;
  const observer = createLivenessObserver({
    selfId: hostId,
    leaseMs: deps.leaseMs,
    minObservations: Math.max(1, Math.floor(deps.leaseMs / deps.heartbeatMs) - 1),
  });
  let stopped = false;
  let superseded = false;
  let observing = false;
  let timer: TimerHandle | null = null;
  const realNow = deps.realNow ?? (() => performance.now());
  let lastBeatAt = realNow();
  let inDoubt = false;
  const doubt = (reason: "superseded" | "no_heartbeat") => {
    if (inDoubt) return;
    inDoubt = true;
    deps.onInDoubt?.(reason);
  };

  const observe = async () => {
    if (observing) return;
    observing = true;
    try {
      const dead = observer.observe(await readHostRows(db), clock.now());
      for (const host of dead) {
        if (stopped) break;
        try {
          await deps.onDead(host);
        } catch (err) {
          log.warn("host.takeover_failed", { deadHostId: host.id, ...errorFields(err) });
        }
      }
    } catch (err) {
      log.warn("host.liveness_read_failed", errorFields(err));
    } finally {
      observing = false;
    }
  };

  const tick = async () => {
    if (stopped) return;
    // First, before any query: a whole lease without a committed beat (a pause, a partition).
    if (realNow() - lastBeatAt >= deps.leaseMs) doubt("no_heartbeat");
    try {
      if (await beat(db, { hostId, incarnation, at: clock.date() })) {
        lastBeatAt = realNow();
        if (!superseded) inDoubt = false;
      } else if (!superseded && !stopped) {
        superseded = true;
        doubt("superseded");
        log.error("host.superseded", { hostId, incarnation });
        deps.onSuperseded();
        return;
      }
    } catch (err) {
      log.warn("host.heartbeat_failed", errorFields(err));
      if (realNow() - lastBeatAt >= deps.leaseMs) doubt("no_heartbeat");
    }
    if (!superseded) void observe();
  };
  const schedule = () => {
    if (stopped) return;
    timer = clock.setTimeout(() => {
      void tick().finally(schedule);
    }, deps.heartbeatMs);
  };
  schedule();
  return {
    stop() {
      stopped = true;
      if (timer) clock.clearTimeout(timer);
    },
    tick,
  };
}
