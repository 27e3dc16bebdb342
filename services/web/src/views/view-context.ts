// What every view gets: the stores, the bus of the signed-in person and the one way to report a
// refusal (its code and message, shown to the person; never swallowed).
import type { ConsoleBus } from "../bus.ts";
import type { AppStores } from "../stores.ts";

export interface ViewContext {
  stores: AppStores;
  bus: ConsoleBus;
  /** The signed-in principal (the NATS user). */
  principal: string;
  /** Shows an error from the host (code and message) or a local one. */
  report(err: unknown, what: string): void;
  /** The clock for countdowns. */
  now(): number;
}

/** `CODE: message` of an AppError from the host; the message alone for anything else. */
export function describeError(err: unknown): { code: string | null; message: string } {
  if (typeof err === "object" && err !== null && "code" in err && typeof err.code === "string") {
    const message = (err as { message?: unknown }).message;
    return { code: err.code, message: typeof message === "string" ? message : "" };
  }
  return { code: null, message: err instanceof Error ? err.message : String(err) };
}

export function errorText(err: unknown): string {
  const { code, message } = describeError(err);
  return code ? `${code}: ${message}` : message;
}
