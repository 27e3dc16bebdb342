// The SQL side of keyset pages (services/protocol/pages.ts): a list's order keys, compared with the
// position a page's `next` named, and times spelled as the exact microseconds Postgres stores (a JS
// Date keeps milliseconds only). The stores' list queries are built from these.
import {
  decodePosition,
  encodePosition,
  LIST_PAGE_DEFAULT_ROWS,
  type Position,
} from "../../protocol/pages.ts";

/** A timestamptz column as whole microseconds since the epoch, exact. */
export const microsSql = (col: string) => `(extract(epoch FROM ${col}) * 1000000)::bigint`;

/** How a list runs: oldest (lowest) first, paged by `after`; or newest first, paged by `before`. */
export type PageDirection = "after" | "before";

/** What a list's query needs from a page request: its LIMIT, its keyset condition and parameters. */
export interface KeysetWindow {
  /** Rows the page may hold (a whole number, 1 or more); the query reads `limit + 1`. */
  limit: number;
  /** `... WHERE <condition>`: true on the first page, else the rows past the position. */
  condition: string;
  /** `ORDER BY <order>` */
  order: string;
  /** The condition's parameters, numbered from the `first` given. */
  params: unknown[];
}

/**
 * The window of one page over `keys` (numeric order keys first, then the unique text id, all SQL
 * expressions of the list's select): `cursor` is decoded for this shape (INVALID_PARAMS otherwise),
 * and its parameters are `$first`, `$first + 1`, ...
 */
export function keysetWindow(
  p: { limit?: number | undefined; cursor?: string | undefined },
  o: { keys: readonly string[]; direction: PageDirection; first: number; defaultLimit?: number },
): KeysetWindow {
  const numbers = o.keys.length - 1;
  const pos: Position | null = decodePosition(p.cursor, numbers, o.direction);
  const placeholders = o.keys.map((_, i) => `$${o.first + i}::${i < numbers ? "bigint" : "text"}`);
  const cmp = o.direction === "after" ? ">" : "<";
  const dir = o.direction === "after" ? "ASC" : "DESC";
  // Decoded params bound `limit` already; a query's LIMIT is spelled from it, so it is a whole number.
  const limit = Math.max(1, Math.floor(Number(p.limit ?? o.defaultLimit ?? LIST_PAGE_DEFAULT_ROWS) || 1));
  return {
    limit,
    condition: `(${placeholders[0]} IS NULL OR (${o.keys.join(", ")}) ${cmp} (${placeholders.join(", ")}))`,
    order: o.keys.map((k) => `${k} ${dir}`).join(", "),
    params: pos ? [...pos.nums, pos.id] : o.keys.map(() => null),
  };
}

/**
 * The window of the common list order: a timestamptz column in exact microseconds, then the row's
 * id (`time`, `id`: SQL expressions). `select` names the time for the position (timePosition).
 */
export function timeWindow(
  p: { limit?: number | undefined; cursor?: string | undefined },
  o: { time: string; id: string; direction: PageDirection; first: number; defaultLimit?: number },
): KeysetWindow & { select: string } {
  const us = microsSql(o.time);
  const { time: _t, id, ...rest } = o;
  return { ...keysetWindow(p, { ...rest, keys: [us, id] }), select: `${us} AS position_us` };
}

/** The position of a row read with timeWindow's `select`, after its `id`. */
export const timePosition = (row: { position_us: string; id: string }) =>
  encodePosition([row.position_us], row.id);
