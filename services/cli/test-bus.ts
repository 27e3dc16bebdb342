// The bus double of the CLI's unit tests (cli-program.test.ts, cli-prompt.test.ts): answers calls from
// a table and records the order of calls and subscriptions.
import { AppError } from "../protocol/app-error.ts";
import type { SessionEvent } from "../protocol/events.ts";
import type { CliBus, EventSubscription } from "./cli-bus.ts";

export type Handler = (params: unknown) => unknown;

/** A bus double: answers calls from a table, records the order of calls and subscriptions. */
export function fakeBus(handlers: Record<string, Handler>, eventsAfter: Record<string, SessionEvent[]> = {}) {
  const log: string[] = [];
  const queue: SessionEvent[] = [];
  let subscribed = false;
  const bus: CliBus = {
    async call<T>(method: string, params?: unknown): Promise<T> {
      log.push(`call ${method} ${JSON.stringify(params)}`);
      const h = handlers[method];
      if (!h) throw new AppError("UNKNOWN_METHOD", `no ${method}`);
      const result = h(params);
      if (subscribed) queue.push(...(eventsAfter[method] ?? []));
      return result as T;
    },
    async subscribe(sessionId: string | null): Promise<EventSubscription> {
      log.push(`subscribe ${sessionId}`);
      subscribed = true;
      return {
        async next(deadline: number) {
          const e = queue.shift();
          if (e) return e;
          await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())));
          return null;
        },
        close() {
          log.push("unsubscribe");
        },
      };
    },
    async close() {
      log.push("close");
    },
  };
  return { bus, log };
}
