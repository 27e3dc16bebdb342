// The one paging helper (bounded-page.ts, with the positions of services/protocol/pages.ts): pages
// stay within their row and byte bounds (always one row), and reading a list by `next` while rows
// are added to it meanwhile returns every row that was there exactly once, in order. The lists read
// from rows are played here by a sorted array and the keyset filter their SQL applies.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AppError } from "../../protocol/app-error.ts";
import { jsonBytes } from "../../protocol/byte-bounds.ts";
import { decodePosition, encodePosition, LIST_PAGE_MAX_BYTES } from "../../protocol/pages.ts";
import { boundPage, pageOfList } from "./bounded-page.ts";

interface Row {
  us: number;
  id: string;
  text: string;
}

const position = (r: Row) => encodePosition([r.us], r.id);
/** (us, id) compared as the keyset's row comparison compares them. */
const cmp = (a: { us: number; id: string }, b: { us: number; id: string }) =>
  a.us !== b.us ? a.us - b.us : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

/** One page as a store reads it: the rows past `cursor` in the list's order, limit + 1 of them. */
function readPage(
  rows: Row[],
  dir: "after" | "before",
  cursor: string | null,
  limit: number,
  maxBytes: number,
) {
  const pos = decodePosition(cursor ?? undefined, 1, dir);
  const at = pos ? { us: Number(pos.nums[0]), id: pos.id } : null;
  const ordered = [...rows].sort((a, b) => (dir === "after" ? cmp(a, b) : cmp(b, a)));
  const past = ordered.filter((r) => at === null || (dir === "after" ? cmp(r, at) > 0 : cmp(r, at) < 0));
  return boundPage(past.slice(0, limit + 1), { limit, maxBytes, view: (r) => r, position });
}

const rowArb = fc.record({
  us: fc.integer({ min: 1, max: 1_000 }),
  id: fc.stringMatching(/^[a-z]{1,6}$/),
  text: fc.string({ maxLength: 300 }),
});

describe("boundPage", () => {
  it("keeps at most limit rows and maxBytes of their JSON, always the first row, and says where to go on", () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ n: i, pad: "x".repeat(100) }));
    const page = boundPage(rows.slice(0, 6), {
      limit: 5,
      maxBytes: 300,
      view: (r) => r,
      position: (r) => `p${r.n}`,
    });
    expect(page.items.map((r) => r.n)).toEqual([0, 1]);
    expect(jsonBytes(page.items)).toBeLessThanOrEqual(300);
    expect(page.next).toBe("p1");
    // One row over the bound alone is still a page: the list moves on.
    const big = boundPage([{ pad: "y".repeat(1000) }, { pad: "" }], {
      limit: 5,
      maxBytes: 300,
      view: (r) => r,
      position: () => "big",
    });
    expect(big.items).toHaveLength(1);
    expect(big.next).toBe("big");
    // Fewer rows than limit + 1 read: the last page.
    expect(
      boundPage(rows.slice(0, 5), { limit: 5, view: (r) => r, position: (r) => `p${r.n}` }).next,
    ).toBeNull();
    expect(boundPage(rows.slice(0, 6), { limit: 5, view: (r) => r, position: (r) => `p${r.n}` }).next).toBe(
      "p4",
    );
  });

  it("a row a filter skips still moves the position (a page may keep nothing and go on)", () => {
    const page = boundPage([1, 2, 3], { limit: 2, view: () => null, position: (n) => `p${n}` });
    expect(page).toEqual({ items: [], next: "p2" });
  });

  it("reading by next while rows are added returns every earlier row exactly once, pages within bounds", () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(rowArb, { minLength: 0, maxLength: 120, selector: (r) => `${r.us}.${r.id}` }),
        fc.array(rowArb, { maxLength: 40 }),
        fc.constantFrom("after" as const, "before" as const),
        fc.integer({ min: 1, max: 20 }),
        fc.integer({ min: 200, max: 3_000 }),
        (initial, added, dir, limit, maxBytes) => {
          const rows = [...initial];
          const seen: string[] = [];
          let cursor: string | null = null;
          for (let pages = 0; pages < 1_000; pages++) {
            const page = readPage(rows, dir, cursor, limit, maxBytes);
            expect(page.items.length).toBeLessThanOrEqual(limit);
            if (page.items.length > 1)
              expect(page.items.reduce((n, r) => n + jsonBytes(r) + 1, 0)).toBeLessThanOrEqual(maxBytes);
            seen.push(...page.items.map((r) => `${r.us}.${r.id}`));
            // Others add rows between pages (new keys only: ids are unique per position).
            const extra = added.shift();
            if (extra && !rows.some((r) => r.us === extra.us && r.id === extra.id)) rows.push(extra);
            if (page.next === null) break;
            cursor = page.next;
          }
          expect(new Set(seen).size).toBe(seen.length);
          for (const r of initial) expect(seen).toContain(`${r.us}.${r.id}`);
          const ordered = seen.map((k) => {
            const [us, id] = k.split(".");
            return { us: Number(us), id: id! };
          });
          for (let i = 1; i < ordered.length; i++)
            expect(
              dir === "after" ? cmp(ordered[i - 1]!, ordered[i]!) : cmp(ordered[i]!, ordered[i - 1]!),
            ).toBeLessThan(0);
        },
      ),
    );
  });

  it("uses the list bound by default", () => {
    const rows = Array.from({ length: 200 }, (_, i) => ({ i, pad: "z".repeat(4_000) }));
    const page = boundPage(rows, { limit: 199, view: (r) => r, position: (r) => `p${r.i}` });
    expect(page.items.length).toBeLessThan(199);
    expect(jsonBytes(page.items)).toBeLessThanOrEqual(LIST_PAGE_MAX_BYTES);
  });
});

describe("positions", () => {
  it("round-trip, and a position of another shape is INVALID_PARAMS naming the field", () => {
    expect(decodePosition(encodePosition(["1715000000123456"], "ses_a-B"), 1, "before")).toEqual({
      nums: ["1715000000123456"],
      id: "ses_a-B",
    });
    expect(decodePosition(undefined, 1, "before")).toBeNull();
    for (const bad of ["ses_a", "1.2.ses_a", "x.ses_a", "1.", "1.a.b", `1.${"a".repeat(65)}`]) {
      let err: unknown;
      try {
        decodePosition(bad, 1, "after");
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(AppError);
      expect(err).toMatchObject({ code: "INVALID_PARAMS", details: { field: "after" } });
    }
  });
});

describe("pageOfList", () => {
  it("pages an in-memory list by key in code-unit order, each item once", () => {
    const workers = ["w-b", "W-a", "w_c", "w-a", "0"].map((workerId) => ({ workerId }));
    const seen: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = pageOfList(workers, (w) => w.workerId, { limit: 2, ...(after ? { after } : {}) });
      seen.push(...page.items.map((w) => w.workerId));
      if (page.next === null) break;
      after = page.next;
    }
    expect(seen).toEqual(["0", "W-a", "w-a", "w-b", "w_c"]);
  });
});
