// Reading a keyset list page by page (docs/protocol.md "Lists and pages") for the CLI and the web
// console: each page is one bounded reply, `next` asks for the following one, and a reader stops at
// a bound of its own, so no list a client shows depends on what others added to it. Pure: the call
// is given. No TypeBox, no Node built-ins (the web console bundles it).
import type { ParamsOf, ResultOf } from "./methods.ts";

/** The paged lists: the field of the result that holds the rows, and the param `next` is passed as. */
export const PAGED_LISTS = {
  "session.list": { items: "sessions", cursor: "before" },
  "plans.pending": { items: "proposals", cursor: "after" },
  "permissions.pending": { items: "requests", cursor: "after" },
  "scheduled.list": { items: "tasks", cursor: "after" },
  "scheduled.runs": { items: "runs", cursor: "before" },
  "projects.list": { items: "projects", cursor: "before" },
  "projects.members.list": { items: "members", cursor: "after" },
  "plugins.list": { items: "plugins", cursor: "after" },
  "workers.list": { items: "workers", cursor: "after" },
} as const satisfies Record<string, { items: string; cursor: "after" | "before" }>;

export type PagedList = keyof typeof PAGED_LISTS;
type ItemsField<M extends PagedList> = (typeof PAGED_LISTS)[M]["items"];
/** One row of a paged list's result. */
export type ListItem<M extends PagedList> =
  ResultOf<M> extends Record<ItemsField<M>, ReadonlyArray<infer I>> ? I : never;
/** A list's params besides the paging ones (its filters). */
export type ListFilters<M extends PagedList> = Omit<ParamsOf<M>, "limit" | "after" | "before">;

/** What walkList reads with: a typed client (services/protocol/rpc-client.ts, the CLI's or console's bus). */
export interface ListClient {
  // Method syntax: any typed client's generic `call` fits.
  call(method: PagedList, params: never): Promise<unknown>;
}

/** Rows a reader asks for per page when it reads a whole list (the hosts' common maximum). */
export const WALK_PAGE_ROWS = 200;

export interface WalkedList<M extends PagedList> {
  /** Every row read, in the list's order. */
  items: ListItem<M>[];
  /** The first page's result as the host sent it (fields besides the rows: a project's owner, ...). */
  first: ResultOf<M>;
  /** Where the reading stopped: null when the list was read to its end, else the next position. */
  next: string | null;
}

/**
 * Reads `method` from its first page (or from the position `from`) until `next` is null or
 * `maxRows` rows are read (then `next` says where it stopped), calling `onPage` with each page's
 * rows as they come. A host that answers a position it was just given again ends the reading there
 * (it could never end otherwise).
 */
export async function walkList<M extends PagedList>(
  client: ListClient,
  method: M,
  filters: ListFilters<M>,
  o: {
    maxRows: number;
    pageRows?: number;
    from?: string;
    onPage?: (rows: ListItem<M>[]) => void | Promise<void>;
  },
): Promise<WalkedList<M>> {
  const spec = PAGED_LISTS[method];
  const items: ListItem<M>[] = [];
  let cursor: string | null = o.from ?? null;
  let first: ResultOf<M> | null = null;
  for (;;) {
    const limit = Math.max(1, Math.min(o.pageRows ?? WALK_PAGE_ROWS, o.maxRows - items.length));
    const params = { ...filters, limit, ...(cursor !== null ? { [spec.cursor]: cursor } : {}) };
    const page = (await client.call(method, params as never)) as ResultOf<M> & { next: string | null };
    first ??= page;
    const rows = ((page as Record<string, unknown>)[spec.items] ?? []) as ListItem<M>[];
    items.push(...rows);
    await o.onPage?.(rows);
    const next = page.next ?? null;
    if (next === null || next === cursor || items.length >= o.maxRows) return { items, first, next };
    cursor = next;
  }
}
