// The workers this host has heard from lately and what they serve (docs/protocol.md "Models"):
// each worker's hello (again every 30 s) replaces its entry; its goodbye (it stopped) removes it at
// once, and one not heard from for WORKER_FORGET_MS is forgotten; a worker's requests (claim,
// heartbeat, tool calls) count as heard too. models.list and workers.list answer from it. In memory:
// after a restart the next hellos fill it again within a hello interval.
import type { AgentHello } from "../../../protocol/schemas.ts";
import type { Clock } from "../../clock.ts";

export const WORKER_FORGET_MS = 90_000;
/** A turn a worker named and that is not leased now is forgotten after this long. */
const TURN_FORGET_MS = 60_000;
/** Workers remembered at most (a hostile flood of hellos with new ids evicts the oldest). */
const MAX_WORKERS = 1_000;

export interface ServedModel {
  provider: string;
  model: string;
  /** Live workers that serve it. */
  workers: number;
  /** Whether one of them has its key configured. */
  keyConfigured: boolean;
}

/** One live worker as workers.list shows it. */
export interface WorkerView {
  workerId: string;
  serves: Array<{ provider: string; model: string }>;
  lastSeenAt: string;
  /** Turns it holds a lease on here now. */
  turns: number;
}

export function createWorkerRegistry(deps: {
  clock: Clock;
  /** Whether a worker holds the turn's lease now (turn-dispatcher.ts); none: every turn counts 0. */
  isLeased?: (turnId: string) => boolean;
}) {
  const workers = new Map<string, { serves: NonNullable<AgentHello["serves"]>; at: number }>();
  /**
   * The turns each worker's requests named (claims, token-checked requests) and when last; one not
   * leased for TURN_FORGET_MS is dropped (a claim is named before its lease is granted).
   */
  const turnsOf = new Map<string, Map<string, number>>();
  return {
    heard(hello: AgentHello): void {
      workers.delete(hello.workerId);
      workers.set(hello.workerId, { serves: hello.serves ?? [], at: deps.clock.now() });
      if (workers.size > MAX_WORKERS) {
        const oldest = workers.keys().next().value!;
        workers.delete(oldest);
        turnsOf.delete(oldest);
      }
    },
    /** The worker said goodbye (it stopped): not listed, and its models not served, from now on. */
    forget(workerId: string): void {
      workers.delete(workerId);
      turnsOf.delete(workerId);
    },
    /** A request proved to be from this worker (host-bus workerOf), about this turn. */
    worked(workerId: string, turnId: unknown): void {
      const w = workers.get(workerId);
      // Only workers that said hello are listed; the hello comes first (services/agent/main.ts).
      if (!w) return;
      w.at = deps.clock.now();
      if (typeof turnId !== "string") return;
      for (const [id, named] of turnsOf) if (id !== workerId) named.delete(turnId);
      const named = turnsOf.get(workerId) ?? new Map<string, number>();
      named.set(turnId, deps.clock.now());
      turnsOf.set(workerId, named);
    },
    /** Live workers (heard from within WORKER_FORGET_MS), by id, with the turns they hold. */
    list(): WorkerView[] {
      const now = deps.clock.now();
      const out: WorkerView[] = [];
      for (const [workerId, w] of workers) {
        if (now - w.at > WORKER_FORGET_MS) {
          workers.delete(workerId);
          turnsOf.delete(workerId);
          continue;
        }
        let turns = 0;
        for (const [turnId, at] of turnsOf.get(workerId) ?? []) {
          if (deps.isLeased?.(turnId)) turns += 1;
          else if (now - at > TURN_FORGET_MS) turnsOf.get(workerId)?.delete(turnId);
        }
        out.push({
          workerId,
          serves: w.serves.flatMap((p) => p.models.map((model) => ({ provider: p.provider, model }))),
          lastSeenAt: new Date(w.at).toISOString(),
          turns,
        });
      }
      return out.sort((a, b) => a.workerId.localeCompare(b.workerId));
    },
    /** Workers heard from within WORKER_FORGET_MS. */
    liveWorkers(): number {
      const now = deps.clock.now();
      let n = 0;
      for (const w of workers.values()) if (now - w.at <= WORKER_FORGET_MS) n++;
      return n;
    },
    /**
     * Whether a live worker serves `provider/model` with its key configured; null when no worker
     * has been heard from (right after a host start): then nobody can say.
     */
    serves(provider: string, model: string): boolean | null {
      if (this.liveWorkers() === 0) return null;
      return this.models().some((m) => m.provider === provider && m.model === model && m.keyConfigured);
    },
    /** Every model a live worker serves, sorted by provider and model. */
    models(): ServedModel[] {
      const now = deps.clock.now();
      const byKey = new Map<string, ServedModel>();
      for (const [id, w] of workers) {
        if (now - w.at > WORKER_FORGET_MS) {
          workers.delete(id);
          continue;
        }
        for (const p of w.serves)
          for (const model of p.models) {
            const key = `${p.provider}\u0000${model}`;
            const m = byKey.get(key) ?? { provider: p.provider, model, workers: 0, keyConfigured: false };
            m.workers += 1;
            m.keyConfigured ||= p.keyConfigured;
            byKey.set(key, m);
          }
      }
      return [...byKey.values()].sort((a, b) =>
        a.provider === b.provider ? a.model.localeCompare(b.model) : a.provider.localeCompare(b.provider),
      );
    },
  };
}

export type WorkerRegistry = ReturnType<typeof createWorkerRegistry>;
