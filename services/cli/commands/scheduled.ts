// `pihost scheduled create|list|update|delete|run|runs`: unattended prompts on a cron schedule
// (scheduled.*). Cron expressions and time zones go to the host as given; the host validates them.
import type { Command } from "commander";
import {
  formatRunList,
  formatRunStarted,
  formatTask,
  formatTaskCreated,
  formatTaskDeleted,
  formatTaskList,
} from "../admin-format.ts";
import {
  RUNS_LIMIT_MAX,
  scheduledCreateParams,
  scheduledUpdateParams,
  type TaskFiles,
  type TaskOptions,
} from "../admin-params.ts";
import { UsageError } from "../cli-error.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";
import { bus, isJson, out, outJson, type Run, readJson } from "../cli-run.ts";

interface TaskCli extends TaskOptions {
  promptFile?: string;
  script?: string;
  quiet?: boolean;
}

/** The options create and update share; on update each is optional and changes only its field. */
function taskOptions(cmd: Command, required: boolean): Command {
  const req = required ? " (required)" : "";
  return cmd
    .option("--name <name>", `task name${req}`)
    .option("--cron <expr>", `five cron fields, e.g. "0 9 * * 1-5"${req}`)
    .option("--timezone <zone>", `IANA time zone the cron fields are read in, e.g. Europe/Berlin${req}`)
    .option("--project <id>", `project the runs happen in${req}`)
    .option("--prompt <text>", `the prompt each run sends${req ? " (this or --prompt-file)" : ""}`)
    .option("--prompt-file <file>", "read the prompt from a file")
    .option("--mode <mode>", "agent|plan (default agent; a Plan task is refused when it runs)")
    .option("--permission-mode <mode>", "inherit|ask|accept-edits|auto (default inherit)")
    .option("--model <provider/model>", "model of the runs (default: the host's default)")
    .option("--script <file.json>", "a scripted model replaying the JSON array of steps in the file")
    .option("--enabled <on|off>", "whether the scheduler runs it (default on)");
}

async function taskFiles(run: Run, opts: TaskCli): Promise<TaskFiles> {
  const files: TaskFiles = {};
  if (opts.promptFile !== undefined) {
    try {
      files.promptFile = { file: opts.promptFile, text: await run.deps.readFile(opts.promptFile) };
    } catch (cause) {
      throw new UsageError(`cannot read --prompt-file ${opts.promptFile}: ${(cause as Error).message}`);
    }
  }
  if (opts.script !== undefined)
    files.script = { file: opts.script, steps: await readJson(run, opts.script) };
  return files;
}

export function addScheduledCommands(program: Command, run: Run): void {
  const scheduled = program
    .command("scheduled")
    .description("scheduled tasks: a prompt run unattended in a project on a cron schedule");
  taskOptions(scheduled.command("create").description("create a scheduled task (you own it)"), true)
    .option("-q, --quiet", "print only the new task id")
    .action(async (opts: TaskCli, cmd: Command) => {
      const params = scheduledCreateParams(opts, await taskFiles(run, opts));
      const t = await (await bus(run)).call("scheduled.create", params);
      if (isJson(cmd)) outJson(run, t);
      else if (opts.quiet) out(run, [t.id]);
      else out(run, formatTaskCreated(t));
    });
  listOptions(
    scheduled.command("list").description("your scheduled tasks, oldest first"),
    "scheduled.list",
  ).action(async (opts: ListCli, cmd: Command) => {
    await runList(run, cmd, "scheduled.list", {}, opts, {
      format: formatTaskList,
      empty: "no scheduled tasks",
      command: "pihost scheduled list",
    });
  });
  taskOptions(
    scheduled
      .command("update")
      .description("change a task you own; only the options given change")
      .argument("<taskId>"),
    false,
  ).action(async (taskId: string, opts: TaskCli, cmd: Command) => {
    const params = scheduledUpdateParams(taskId, opts, await taskFiles(run, opts));
    const t = await (await bus(run)).call("scheduled.update", params);
    if (isJson(cmd)) outJson(run, t);
    else out(run, formatTask(t));
  });
  scheduled
    .command("delete")
    .description("delete a task you own (its runs' sessions stay)")
    .argument("<taskId>")
    .action(async (taskId: string, _opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("scheduled.delete", { taskId });
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatTaskDeleted(r));
    });
  scheduled
    .command("run")
    .description("run a task you own now, outside its schedule (follow it with pihost session show)")
    .argument("<taskId>")
    .option("-q, --quiet", "print only the new run id")
    .action(async (taskId: string, opts: { quiet?: boolean }, cmd: Command) => {
      const r = await (await bus(run)).call("scheduled.run", { taskId });
      if (isJson(cmd)) outJson(run, r);
      else if (opts.quiet) out(run, [r.runId]);
      else out(run, formatRunStarted(r));
    });
  listOptions(
    scheduled.command("runs").description("a task's runs, newest first").argument("<taskId>"),
    "scheduled.runs",
    RUNS_LIMIT_MAX,
  ).action(async (taskId: string, opts: ListCli, cmd: Command) => {
    await runList(run, cmd, "scheduled.runs", { taskId }, opts, {
      format: formatRunList,
      empty: "no runs",
      command: `pihost scheduled runs ${taskId}`,
      maxLimit: RUNS_LIMIT_MAX,
    });
  });
}
