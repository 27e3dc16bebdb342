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
