// `pihost project members <projectId>`, `... members add|remove <projectId> <principal>` and
// `pihost project leave <projectId>`: who may use a project (projects.members.*, projects.leave).
// Only the owner adds or removes; the owner cannot be removed and cannot leave; anyone else may leave.
import type { Command } from "commander";
import { formatMembers } from "../admin-format.ts";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";

export function addMemberCommands(project: Command, run: Run): void {
  const members = listOptions(
    project
      .command("members")
      .description("list a project's members (the owner first); add or remove one")
      .argument("<projectId>"),
    "projects.members.list",
  ).action(async (projectId: string, opts: ListCli, cmd: Command) => {
    await runList(run, cmd, "projects.members.list", { projectId }, opts, {
      format: () => [],
      whole: (first, rows) => formatMembers({ ...first, members: rows }),
      command: `pihost project members ${projectId}`,
    });
  });
  for (const [name, what] of [
    ["add", "make a principal a member (owner only; adding a member again changes nothing)"],
    ["remove", "remove a member at once, with their approver rights (owner only; not the owner)"],
  ] as const) {
    members
      .command(name)
      .description(what)
      .argument("<projectId>")
      .argument("<principal>")
      .action(async (projectId: string, principal: string, _opts: unknown, cmd: Command) => {
        const r = await (await bus(run)).call(`projects.members.${name}`, { projectId, principal });
        if (isJson(cmd)) return outJson(run, r);
        out(run, formatMembers(r));
        if (r.next !== null) out(run, [`more: pihost project members ${projectId} --after ${r.next}`]);
      });
  }
  project
    .command("leave")
    .description(
      "end your own membership: you are no approver of its sessions from now on; the sessions you own stay yours (not the owner)",
    )
    .argument("<projectId>")
    .action(async (projectId: string, _opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("projects.leave", { projectId });
      if (isJson(cmd)) outJson(run, r);
      else out(run, [`left project ${r.projectId}`]);
    });
}
