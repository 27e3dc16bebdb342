// The workers this host has heard from lately and what they serve (docs/protocol.md "Models"):
// each worker's hello (again every 30 s) replaces its entry; one not heard from for
// WORKER_FORGET_MS is forgotten. models.list answers from it. In memory: after a restart the next
// hellos fill it again within a hello interval.
import type { AgentHello } from "../../protocol/schemas.ts";
import type { Clock } from "../clock.ts";

export const WORKER_FORGET_MS = 90_000;
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

export function createWorkerRegistry(deps: { clock: Clock }) {
  const workers = new Map<string, { serves: NonNullable<AgentHello["serves"]>; at: number }>();
  return {
    heard(hello: AgentHello): void {
      workers.delete(hello.workerId);
      workers.set(hello.workerId, { serves: hello.serves ?? [], at: deps.clock.now() });
      if (workers.size > MAX_WORKERS) workers.delete(workers.keys().next().value!);
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
