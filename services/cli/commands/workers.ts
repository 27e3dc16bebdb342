// `pihost workers`: the agent workers the host heard from lately, what each serves and the turns it
// holds (workers.list).
import type { Command } from "commander";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";

export function addWorkerCommands(program: Command, run: Run): void {
  program
    .command("workers")
    .description("the agent workers the host heard from in the last 90 s: what each serves, its turns")
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("workers.list");
      if (isJson(cmd)) return outJson(run, r);
      if (r.workers.length === 0)
        return out(run, ["no live worker (is an agent worker running? docs/models.md)"]);
      out(
        run,
        r.workers.flatMap((w) => [
          `worker ${w.workerId}  ${w.turns} turn${w.turns === 1 ? "" : "s"}  last seen ${w.lastSeenAt}`,
          ...w.serves.map((m) => `  serves ${m.provider}/${m.model}`),
        ]),
      );
    });
}
