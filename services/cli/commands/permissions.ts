// `pihost permissions pending|allow|allow-session|deny`: tool calls waiting for a person.
import type { Command } from "commander";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";

export function addPermissionCommands(program: Command, run: Run): void {
  const permissions = program
    .command("permissions")
    .description("tool calls waiting for a person's permission");
  listOptions(
    permissions
      .command("pending")
      .description("list permission prompts waiting for an answer, oldest first")
      .option("--session <id>", "only this session's"),
    "permissions.pending",
  ).action(async (opts: ListCli & { session?: string }, cmd: Command) => {
    const filters = opts.session ? { sessionId: opts.session } : {};
    await runList(run, cmd, "permissions.pending", filters, opts, {
      format: (rows) =>
        rows.map(
          (q) => `${q.requestId}  ${q.tool} (${q.risk})  ${JSON.stringify(q.preview)}  until ${q.deadline}`,
        ),
      empty: "no permission prompts are waiting",
      command: `pihost permissions pending${opts.session ? ` --session ${opts.session}` : ""}`,
    });
  });
  for (const [name, decision, what] of [
    ["allow", "allow-once", "allow this one call"],
    [
      "allow-session",
      "allow-session",
      "allow this tool for the rest of the session (never lifts a Plan denial)",
    ],
    ["deny", "deny", "deny the call"],
  ] as const) {
    permissions
      .command(name)
      .description(what)
      .argument("<requestId>")
      .action(async (requestId: string, _opts: unknown, cmd: Command) => {
        const r = await (await bus(run)).call("permissions.resolve", {
          requestId,
          decision,
        });
        if (isJson(cmd)) outJson(run, r);
        else out(run, [`${r.requestId}: ${r.decision ?? r.status}`]);
      });
  }
}
