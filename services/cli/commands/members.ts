// `pihost project members <projectId>` and `... members add|remove <projectId> <principal>`: who may
// use a project (projects.members.*). Only the owner adds or removes; the owner cannot be removed.
import type { Command } from "commander";
import { formatMembers } from "../admin-format.ts";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";

export function addMemberCommands(project: Command, run: Run): void {
  const members = project
    .command("members")
    .description("list a project's members (the owner first); add or remove one")
    .argument("<projectId>")
    .action(async (projectId: string, _opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("projects.members.list", { projectId });
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatMembers(r));
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
        if (isJson(cmd)) outJson(run, r);
        else out(run, formatMembers(r));
      });
  }
}
