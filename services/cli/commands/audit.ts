// `pihost audit`: one page of the audit rows the caller may read (audit.list), newest first.
import type { Command } from "commander";
import { formatAuditPage } from "../admin-format.ts";
import { AUDIT_LIMIT_MAX, type AuditOptions, auditListParams } from "../admin-params.ts";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";

export function addAuditCommand(program: Command, run: Run): void {
  program
    .command("audit")
    .description("audit rows you may read (your sessions and projects; settings admins: all), newest first")
    .option("--session <id>", "only this session's rows")
    .option("--project <id>", "only this project's rows (its own and its sessions')")
    .option("--before <cursor>", "rows older than this cursor (the `more:` line of the previous page)")
    .option("--limit <n>", `rows in the page, 1 to ${AUDIT_LIMIT_MAX}`)
    .action(async (opts: AuditOptions, cmd: Command) => {
      const params = auditListParams(opts);
      const r = await (await bus(run)).call("audit.list", params);
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatAuditPage(r, opts));
    });
}
