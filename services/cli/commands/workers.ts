// `pihost workers`: the agent workers the host heard from lately, what each serves and the turns it
// holds (workers.list).
import type { Command } from "commander";
import type { Run } from "../cli-run.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";

export function addWorkerCommands(program: Command, run: Run): void {
  listOptions(
    program
      .command("workers")
      .description(
        "the agent workers the host heard from in the last 90 s, by id: what each serves, its turns",
      ),
    "workers.list",
  ).action(async (opts: ListCli, cmd: Command) => {
    await runList(run, cmd, "workers.list", {}, opts, {
      format: (rows) =>
        rows.flatMap((w) => [
          `worker ${w.workerId}  ${w.turns} turn${w.turns === 1 ? "" : "s"}  last seen ${w.lastSeenAt}`,
          ...w.serves.map((m) => `  serves ${m.provider}/${m.model}`),
        ]),
      empty: "no live worker (is an agent worker running? docs/models.md)",
      command: "pihost workers",
    });
  });
}
