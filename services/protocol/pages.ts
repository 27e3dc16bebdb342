// Keyset pages of the client lists (docs/protocol.md "Lists and pages"): the page params, bounds and
// positions every list shares. A position names the last row a page took in the list's order, so
// rows added meanwhile neither shift nor repeat a page; the host bounds pages with
// services/host/store/bounded-page.ts, clients only pass `next` back. No Node built-ins.
import { type Static, Type } from "typebox";
import { AppError } from "./app-error.ts";
import { Nullable } from "./values.ts";

/** Rows in one page at most (`limit`), unless a list says otherwise. */
export const LIST_PAGE_MAX_ROWS = 200;
/** Rows in a page when `limit` is not given. */
export const LIST_PAGE_DEFAULT_ROWS = 50;
/**
 * Bytes of the rows' JSON in one page at most (at least one row is always returned): a quarter of
 * NATS's default max_payload, so a page and its envelope always fit one message.
 */
export const LIST_PAGE_MAX_BYTES = 256 * 1024;

const NUMBER_PART = /^[0-9]{1,18}$/;
const ID_PART = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * A position in a list, opaque to clients: the previous page's `next`. (The host spells it as up to
 * two whole numbers, such as a time in microseconds, then an id, joined by dots.)
 */
export const PageCursor = Type.String({ pattern: "^([0-9]{1,18}\\.){0,2}[A-Za-z0-9_-]{1,64}$" });
export const PageLimit = Type.Integer({ minimum: 1, maximum: LIST_PAGE_MAX_ROWS });

/** Params of a list paged oldest (or lowest id) first: pass `next` as `after`. */
export const AfterPage = { limit: Type.Optional(PageLimit), after: Type.Optional(PageCursor) };
/** Params of a list paged newest first: pass `next` as `before`. */
export const BeforePage = { limit: Type.Optional(PageLimit), before: Type.Optional(PageCursor) };
/** A page's `next`: the position to pass for the following page, null after the last. */
export const PageNext = Nullable(PageCursor);
export type PageNext = Static<typeof PageNext>;

/** A decoded position: its numbers (decimal strings, exact beyond 2^53) and its id. */
export interface Position {
  nums: string[];
  id: string;
}

/**
 * The position a cursor names, for a list whose positions have `numbers` numbers before the id;
 * null without one. A cursor of another shape (another list's) is INVALID_PARAMS naming `field`.
 */
export function decodePosition(cursor: string | undefined, numbers: number, field: string): Position | null {
  if (cursor === undefined) return null;
  const parts = cursor.split(".");
  const id = parts.pop() ?? "";
  if (parts.length !== numbers || !parts.every((p) => NUMBER_PART.test(p)) || !ID_PART.test(id))
    throw new AppError("INVALID_PARAMS", `${field} is not a position of this list (pass a page's next)`, {
      details: { field },
    });
  return { nums: parts, id };
}

export function encodePosition(nums: ReadonlyArray<string | number | bigint>, id: string): string {
  return [...nums.map(String), id].join(".");
}
