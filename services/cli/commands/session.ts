// `pihost session create|list|show|mode|permissions`: agent sessions and their modes.
import { type Command, Option } from "commander";
import {
  OPERATING_MODES,
  operatingMode,
  PERMISSION_MODES,
  permissionMode,
  sessionCreateParams,
} from "../cli-params.ts";
import { bus, collect, isJson, out, outJson, PLAN_NOTE, type Run, readJson } from "../cli-run.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";
import { formatSession, formatSessionCreated, formatSessionList } from "../view-format.ts";

export function addSessionCommands(program: Command, run: Run): void {
  const session = program.command("session").description("agent sessions");
  session
    .command("create")
    .description("create a session in a project")
    .requiredOption("--project <id>", "project id")
    .option("--title <title>", "session title")
    .addOption(new Option("--mode <mode>", `operating mode; ${PLAN_NOTE}`).choices(OPERATING_MODES))
    .addOption(new Option("--permission-mode <mode>", "permission mode").choices(PERMISSION_MODES))
    .option("--model <provider/model>", "model, e.g. anthropic/claude-sonnet-4-5")
    .option("--demo", "use the scripted demo model (scripted/demo)")
    .option("--script <file.json>", "use a scripted model replaying the JSON array of steps in the file")
    .option(
      "--approver <principal>",
      "another principal allowed to approve (repeatable)",
      collect,
      [] as string[],
    )
    .option("-q, --quiet", "print only the new session id")
    .action(async (opts: SessionCreateCli, cmd: Command) => {
      let script: { file: string; steps: unknown } | undefined;
      if (opts.script !== undefined) script = { file: opts.script, steps: await readJson(run, opts.script) };
      const params = sessionCreateParams({ ...opts, script });
      const s = await (await bus(run)).call("session.create", params);
      if (isJson(cmd)) outJson(run, s);
      else if (opts.quiet) out(run, [s.id]);
      else out(run, formatSessionCreated(s));
    });
  listOptions(
    session.command("list").description("list the sessions you own or approve, newest first"),
    "session.list",
  ).action(async (opts: ListCli, cmd: Command) => {
    await runList(run, cmd, "session.list", {}, opts, {
      format: formatSessionList,
      empty: "no sessions",
      command: "pihost session list",
    });
  });
  session
    .command("show")
    .description("show one session")
    .argument("<sessionId>")
    .action(async (sessionId: string, _opts: unknown, cmd: Command) => {
      const s = await (await bus(run)).call("session.get", { sessionId });
      if (isJson(cmd)) outJson(run, s);
      else out(run, formatSession(s));
    });
  session
    .command("mode")
    .description(`switch the operating mode (only while the session is idle); ${PLAN_NOTE}`)
    .argument("<sessionId>")
    .argument("<mode>", OPERATING_MODES.join("|"))
    .action(async (sessionId: string, mode: string, _opts: unknown, cmd: Command) => {
      const params = { sessionId, mode: operatingMode(mode, "mode") };
      const s = await (await bus(run)).call("session.configure", params);
      if (isJson(cmd)) outJson(run, s);
      else out(run, formatSession(s));
    });
  session
    .command("permissions")
    .description("set the permission mode (only while the session is idle)")
    .argument("<sessionId>")
    .argument("<mode>", PERMISSION_MODES.join("|"))
    .action(async (sessionId: string, mode: string, _opts: unknown, cmd: Command) => {
      const params = { sessionId, permissionMode: permissionMode(mode, "permission mode") };
      const s = await (await bus(run)).call("session.configure", params);
      if (isJson(cmd)) outJson(run, s);
      else out(run, formatSession(s));
    });
}

interface SessionCreateCli {
  project: string;
  title?: string;
  mode?: string;
  permissionMode?: string;
  model?: string;
  demo?: boolean;
  script?: string;
  approver?: string[];
  quiet?: boolean;
}
