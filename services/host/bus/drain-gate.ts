// The drain a stopping host runs (docs/operations.md "Stop"): requests in flight are counted, new
// ones refused, and those left at the end answered, so no request goes without a reply.
import { AppError } from "../../protocol/app-error.ts";

/**
 * The drain on SIGTERM/SIGINT (main.ts): from `start()` on every new request is refused with a
 * retriable HOST_SHUTTING_DOWN, while those already being handled finish and are replied to;
 * `idle` says when none is left, and `cut` answers those still waiting (on an actor that stopped)
 * HOST_SHUTTING_DOWN too, so no request is left without a reply. Test hooks are not drained.
 */
export function createDrainGate() {
  let draining = false;
  let inFlight = 0;
  const waiters = new Set<() => void>();
  const cutters = new Set<(err: AppError) => void>();
  const settle = () => {
    // A tick later, so the reply of the request that just finished is sent first (reply.ts).
    if (inFlight > 0) return;
    setImmediate(() => {
      if (inFlight === 0) for (const w of [...waiters]) w();
    });
  };
  return {
    get draining(): boolean {
      return draining;
    },
    start(): void {
      draining = true;
    },
    /** Counts one request's work in flight until it settles. */
    track<T>(work: () => Promise<T>): Promise<T> {
      inFlight += 1;
      let cutter: (err: AppError) => void = () => {};
      const cut = new Promise<never>((_, reject) => {
        cutter = reject;
      });
      cutters.add(cutter);
      return Promise.race([work(), cut]).finally(() => {
        cutters.delete(cutter);
        inFlight -= 1;
        settle();
      });
    },
    /** Ends every request still in flight with HOST_SHUTTING_DOWN (the host is about to exit). */
    cut(): void {
      const err = new AppError(
        "HOST_SHUTTING_DOWN",
        "the host stopped before this request finished; what it did is what the session's rows and events show",
      );
      for (const c of [...cutters]) c(err);
    },
    inFlight: () => inFlight,
    /** Resolves true once no request is in flight, false when timeoutMs passes first. */
    idle(timeoutMs: number): Promise<boolean> {
      if (inFlight === 0) return Promise.resolve(true);
      return new Promise((resolve) => {
        const done = (ok: boolean) => {
          clearTimeout(timer);
          waiters.delete(onIdle);
          resolve(ok);
        };
        const onIdle = () => done(true);
        const timer = setTimeout(() => done(false), timeoutMs);
        waiters.add(onIdle);
      });
    },
  };
}
export type DrainGate = ReturnType<typeof createDrainGate>;
