// The console reads its long lists whole, page by page (list-reads.ts): 2,400 sessions arrive as
// pages of at most 200 by `next`, each once, and a read stopped at the bound marks the list cut.
import { describe, expect, it } from "vitest";
import { readAll } from "./list-reads.ts";
import { initialSessions, sessionsListed } from "./stores.ts";
import { sessionView } from "./test-fixtures.ts";

/** A host double of session.list over `total` sessions, newest first, pages by `before`. */
function host(total: number) {
  const asked: Array<Record<string, unknown>> = [];
  return {
    asked,
    async call(_method: string, params: Record<string, unknown> = {}) {
      asked.push(params);
      const start = typeof params.before === "string" ? Number(params.before.split(".")[0]) : 0;
      const n = Math.min(Number(params.limit), total - start);
      const sessions = Array.from({ length: n }, (_, i) => sessionView({ id: `s${start + i}` }));
      const end = start + n;
      return { sessions, next: end < total ? `${end}.s${end - 1}` : null };
    },
  };
}

describe("readAll", () => {
  it("reads 2,400 sessions in pages of 200, each once, and the list is not cut", async () => {
    const bus = host(2_400);
    const r = await readAll(bus, "session.list", {});
    expect(r.items).toHaveLength(2_400);
    expect(new Set(r.items.map((s) => s.id)).size).toBe(2_400);
    expect(bus.asked).toHaveLength(12);
    expect(bus.asked.every((p) => p.limit === 200)).toBe(true);
    expect(r.next).toBeNull();
    expect(sessionsListed(initialSessions, r.items, r.next !== null).cut).toBe(false);
  });

  it("stops at its bound and says where", async () => {
    const r = await readAll(host(2_400), "session.list", {}, 1_000);
    expect(r.items).toHaveLength(1_000);
    expect(r.next).toBe("1000.s999");
    const ctx = sessionsListed(initialSessions, r.items, r.next !== null);
    expect(ctx.cut).toBe(true);
    expect(Object.keys(ctx.byId)).toHaveLength(1_000);
  });
});
