// The lists the console reads whole (docs/web.md "Long lists"): session.list, plans.pending and
// permissions.pending page by page by `next`, up to WEB_LIST_MAX_ROWS rows each, so a list longer
// than one reply (someone named you approver of thousands of sessions) loads instead of failing.
import {
  type ListClient,
  type ListFilters,
  type PagedList,
  type WalkedList,
  walkList,
} from "../../protocol/page-walk.ts";

/** Rows of one list the console holds at most; past it the list says it shows only the first ones. */
export const WEB_LIST_MAX_ROWS = 10_000;

/** Every page of `method` (its first WEB_LIST_MAX_ROWS rows); `next` non-null: it was cut there. */
export function readAll<M extends PagedList>(
  bus: ListClient,
  method: M,
  filters: ListFilters<M>,
  maxRows = WEB_LIST_MAX_ROWS,
): Promise<WalkedList<M>> {
  return walkList(bus, method, filters, { maxRows });
}
