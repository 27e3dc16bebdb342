// `pihost plans history|get`: a session's plan proposals of every status, and one proposal by id,
// with interrupted and expired plans said plainly (plan-history-format.ts).
import type { Command } from "commander";
import { UsageError } from "../cli-error.ts";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";
import { formatPlanBlock, formatPlanHistory } from "../plan-history-format.ts";

/** The host's bound for one page (PLANS_HISTORY_MAX_ROWS), spelled here so the CLI loads no schemas. */
const MAX_LIMIT = 200;

/** `--limit` as a whole number 1-200; anything else is a usage error (nothing is sent). */
export function historyLimit(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isInteger(n) || n < 1 || n > MAX_LIMIT)
    throw new UsageError(
      `--limit must be a whole number from 1 to ${MAX_LIMIT}, got ${JSON.stringify(value)}`,
    );
  return n;
}

export function addPlanHistoryCommands(plans: Command, run: Run): void {
  plans
    .command("history")
    .description("list a session's plan proposals of every status, newest first")
    .requiredOption("--session <id>", "the session")
    .option("--limit <n>", `proposals per page (1-${MAX_LIMIT}, default 50)`)
    .option("--before <cursor>", "the page older than this position (a previous page's next)")
    .action(async (opts: { session: string; limit?: string; before?: string }, cmd: Command) => {
      const limit = historyLimit(opts.limit);
      const r = await (await bus(run)).call("plans.history", {
        sessionId: opts.session,
        ...(limit !== undefined ? { limit } : {}),
        ...(opts.before !== undefined ? { before: opts.before } : {}),
      });
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatPlanHistory(r, { sessionId: opts.session, limit: opts.limit }));
    });
  plans
    .command("get")
    .description("show one plan proposal, of any status")
    .argument("<proposalId>")
    .action(async (proposalId: string, _opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("plans.get", { proposalId });
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatPlanBlock(r));
    });
}
