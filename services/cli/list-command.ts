// What every list command shares (docs/cli.md "Lists"): by default it reads every page of the list
// (up to MAX_LIST_ROWS rows, with a note on stderr where it stopped) and prints each page as it
// comes; `--limit N` prints one page and the command that continues; `--after` / `--before CURSOR`
// start at a page's `next`. `--json` prints the merged list (one page with --limit).
import type { Command } from "commander";
import {
  type ListFilters,
  type ListItem,
  PAGED_LISTS,
  type PagedList,
  WALK_PAGE_ROWS,
  walkList,
} from "../protocol/page-walk.ts";
import type { ResultOf } from "../protocol/methods.ts";
import { wholeNumber } from "./admin-params.ts";
import { bus, isJson, out, outJson, type Run } from "./cli-run.ts";

/** Rows a list command reads at most without --limit. */
export const MAX_LIST_ROWS = 10_000;

/** The options commander parses for a list (only the list's own cursor option is set). */
export interface ListCli {
  limit?: string;
  after?: string;
  before?: string;
}

/** Adds `--limit` and the list's cursor option (`--after` or `--before`) to a list command. */
export function listOptions(cmd: Command, method: PagedList, maxLimit = WALK_PAGE_ROWS): Command {
  const cursor = PAGED_LISTS[method].cursor;
  return cmd
    .option(
      "--limit <n>",
      `print one page of at most n rows (1-${maxLimit}); without it every page, up to ${MAX_LIST_ROWS} rows`,
    )
    .option(`--${cursor} <cursor>`, "start at this position (a page's next, printed after `more:`)");
}

export interface ListOutput<M extends PagedList> {
  /** Lines of one page's rows (never called with none). */
  format: (rows: ListItem<M>[]) => string[];
  /** The line for a list with no rows (none: nothing is printed). */
  empty?: string;
  /** The command that continues, without its paging options (for `more:` lines). */
  command: string;
  maxLimit?: number;
  /** Instead of printing page by page: the lines of the whole list once read (with its first page). */
  whole?: (first: ResultOf<M>, rows: ListItem<M>[]) => string[];
}

const emptyLines = (o: { empty?: string }) => (o.empty !== undefined ? [o.empty] : []);

/** Runs a list command: one page with --limit, else every page up to MAX_LIST_ROWS. */
export async function runList<M extends PagedList>(
  run: Run,
  cmd: Command,
  method: M,
  filters: ListFilters<M>,
  opts: ListCli,
  o: ListOutput<M>,
): Promise<void> {
  const cursorField = PAGED_LISTS[method].cursor;
  const from = opts[cursorField];
  // A usage error is found before anything is sent.
  const limit =
    opts.limit === undefined
      ? undefined
      : wholeNumber(opts.limit, "--limit", 1, o.maxLimit ?? WALK_PAGE_ROWS);
  const b = await bus(run);
  const json = isJson(cmd);
  const more = (next: string, limit?: number) =>
    `${o.command}${limit !== undefined ? ` --limit ${limit}` : ""} --${cursorField} ${next}`;
  if (limit !== undefined) {
    const params = { ...filters, limit, ...(from !== undefined ? { [cursorField]: from } : {}) };
    const page = (await b.call(method as PagedList, params as never)) as ResultOf<M>;
    if (json) return outJson(run, page);
    const rows = (page as Record<string, unknown>)[PAGED_LISTS[method].items] as ListItem<M>[];
    const next = (page as { next: string | null }).next;
    out(run, o.whole ? o.whole(page, rows) : rows.length > 0 ? o.format(rows) : emptyLines(o));
    if (next !== null) out(run, [`more: ${more(next, limit)}`]);
    return;
  }
  const walked = await walkList(b, method, filters, {
    maxRows: MAX_LIST_ROWS,
    ...(from !== undefined ? { from } : {}),
    onPage: (rows) => {
      if (!json && !o.whole && rows.length > 0) out(run, o.format(rows));
    },
  });
  if (json) {
    const { next: _n, ...fields } = walked.first as Record<string, unknown>;
    outJson(run, { ...fields, [PAGED_LISTS[method].items]: walked.items, next: walked.next });
  } else if (o.whole) out(run, o.whole(walked.first, walked.items));
  else if (walked.items.length === 0) out(run, emptyLines(o));
  if (walked.next !== null)
    run.deps.stderr(`note: stopped after ${walked.items.length} rows; more: ${more(walked.next)}\n`);
}
