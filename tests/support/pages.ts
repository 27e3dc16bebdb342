// Reading a paged list as a client does (docs/protocol.md "Lists and pages"), checking every page
// against the bounds on the way: at most `limit` rows, at most LIST_PAGE_MAX_BYTES of their JSON
// unless the page holds one row, the whole reply within the server's max_payload.
import { expect } from "vitest";
import { LIST_PAGE_DEFAULT_ROWS, LIST_PAGE_MAX_BYTES } from "../../services/protocol/pages.ts";

const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

export interface ReadPages<T> {
  pages: T[][];
  all: T[];
}

/**
 * Every page of a list by `next`, each checked; `between` runs after each page (others adding rows
 * meanwhile). Fails on a page out of bounds, a repeated position or more than `maxPages` pages.
 */
export async function readPages<T>(
  call: (params: Record<string, unknown>) => Promise<Record<string, unknown>>,
  o: {
    items: string;
    cursor: "after" | "before";
    maxPayload: number;
    limit?: number;
    /** The list's own default page when `limit` is not given (LIST_PAGE_DEFAULT_ROWS unless said). */
    defaultLimit?: number;
    params?: Record<string, unknown>;
    between?: (page: number) => Promise<void>;
    maxPages?: number;
  },
): Promise<ReadPages<T>> {
  const pages: T[][] = [];
  const positions = new Set<string>();
  let cursor: string | null = null;
  for (let n = 0; n < (o.maxPages ?? 1_000); n++) {
    const params = {
      ...o.params,
      ...(o.limit !== undefined ? { limit: o.limit } : {}),
      ...(cursor !== null ? { [o.cursor]: cursor } : {}),
    };
    const page = await call(params);
    const rows = page[o.items] as T[];
    expect(Array.isArray(rows), `page ${n}: ${o.items} is a list`).toBe(true);
    expect(rows.length).toBeLessThanOrEqual(o.limit ?? o.defaultLimit ?? LIST_PAGE_DEFAULT_ROWS);
    if (rows.length > 1) expect(bytes(rows), `page ${n} in bytes`).toBeLessThanOrEqual(LIST_PAGE_MAX_BYTES);
    expect(bytes(page), `page ${n}'s reply`).toBeLessThan(o.maxPayload);
    pages.push(rows);
    await o.between?.(n);
    const next = page.next as string | null;
    if (next === null) return { pages, all: pages.flat() };
    expect(positions.has(next), `position ${next} repeated`).toBe(false);
    positions.add(next);
    cursor = next;
  }
  throw new Error(`the list did not end within ${o.maxPages ?? 1_000} pages`);
}
