// The one bound of every list page (docs/protocol.md "Lists and pages"): at most `limit` rows and
// LIST_PAGE_MAX_BYTES of their JSON, always the first row kept, and `next` the position of the last
// row the page took. Pure; the lists read from rows and the one kept in memory (workers) share it.
import { jsonBytes } from "../../protocol/byte-bounds.ts";
import {
  decodePosition,
  encodePosition,
  LIST_PAGE_DEFAULT_ROWS,
  LIST_PAGE_MAX_BYTES,
} from "../../protocol/pages.ts";

export interface BoundedPage<V> {
  items: V[];
  next: string | null;
}

/**
 * One page of `rows`, which were read in the list's order with `limit + 1` rows at most: at most
 * `limit` rows and `maxBytes` of their JSON, and always the first row that is kept. `view` null
 * skips a row (a filter applied after the read); the position still moves past it, so `next` may
 * follow a page that kept nothing. `next` is the position of the last row taken or skipped when
 * rows remain, else null.
 */
export function boundPage<R, V>(
  rows: readonly R[],
  o: { limit: number; maxBytes?: number; view: (row: R) => V | null; position: (row: R) => string },
): BoundedPage<V> {
  const maxBytes = o.maxBytes ?? LIST_PAGE_MAX_BYTES;
  const items: V[] = [];
  let bytes = 0;
  let last: string | null = null;
  for (const row of rows.slice(0, o.limit)) {
    const v = o.view(row);
    if (v !== null) {
      // The comma between rows counts too.
      const size = jsonBytes(v) + 1;
      if (items.length > 0 && bytes + size > maxBytes) return { items, next: last };
      bytes += size;
      items.push(v);
    }
    last = o.position(row);
  }
  return { items, next: rows.length > o.limit ? last : null };
}

/**
 * The page of an in-memory list by `key` (unique; ordered by UTF-16 code units, not by locale)
 * after the position `after` (a key, or none for the first page), bounded as boundPage bounds a
 * page read from rows.
 */
export function pageOfList<T>(
  list: readonly T[],
  key: (t: T) => string,
  p: { limit?: number | undefined; after?: string | undefined },
  maxBytes?: number,
): BoundedPage<T> {
  const limit = p.limit ?? LIST_PAGE_DEFAULT_ROWS;
  const after = decodePosition(p.after, 0, "after")?.id;
  const sorted = [...list].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
  const rest = sorted.filter((t) => after === undefined || key(t) > after).slice(0, limit + 1);
  return boundPage(rest, {
    limit,
    ...(maxBytes !== undefined ? { maxBytes } : {}),
    view: (t) => t,
    position: (t) => encodePosition([], key(t)),
  });
}
