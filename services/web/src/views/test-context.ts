// A ViewContext over a scripted bus for the view tests: every call is recorded and answered by the
// handler the test gives (or refused as the host would refuse an unknown one).
import { AppError } from "../../../protocol/app-error.ts";
import type { ConsoleBus } from "../bus.ts";
import { createAppStores } from "../stores.ts";
import type { ViewContext } from "./view-context.ts";

export type Handler = (method: string, params: Record<string, unknown>) => unknown;

export function testContext(handler: Handler, opts: { principal?: string; now?: number } = {}) {
  const calls: Array<{ method: string; params: Record<string, unknown> }> = [];
  const reports: string[] = [];
  let now = opts.now ?? Date.parse("2026-01-01T10:00:00.000Z");
  const bus = {
    principal: opts.principal ?? "alice",
    async call(method: string, params: Record<string, unknown> = {}) {
      calls.push({ method, params });
      return handler(method, params);
    },
    async close() {},
  } as unknown as ConsoleBus;
  const ctx: ViewContext = {
    stores: createAppStores(),
    bus,
    principal: opts.principal ?? "alice",
    report: (err, what) => reports.push(`${what}: ${(err as AppError).code ?? ""} ${(err as Error).message}`),
    now: () => now,
  };
  return {
    ctx,
    calls,
    reports,
    setNow(ms: number) {
      now = ms;
    },
  };
}

export function refuse(code: ConstructorParameters<typeof AppError>[0], message?: string): never {
  throw new AppError(code, message);
}

/** Lets pending promises (the scripted bus, crypto.subtle) settle. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
}

export function button(root: ParentNode, name: string): HTMLButtonElement {
  const b = [...root.querySelectorAll("button")].find((x) => x.textContent === name);
  if (!b) throw new Error(`no button named ${name}`);
  return b;
}

export async function sha256(text: string): Promise<string> {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}
