// `pihost settings show|set`: the app defaults new sessions start from (settings.*).
import type { Command } from "commander";
import { formatSettings } from "../admin-format.ts";
import { settingsSetParams } from "../admin-params.ts";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";

export function addSettingsCommands(program: Command, run: Run): void {
  const settings = program.command("settings").description("app defaults for new sessions");
  settings
    .command("show")
    .description("the default operating mode and permission mode")
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("settings.get");
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatSettings(r));
    });
  settings
    .command("set")
    .description("change the app defaults (settings admins only outside development mode)")
    .option("--default-mode <mode>", "agent|plan: the mode of new sessions that name none")
    .option(
      "--default-permission-mode <mode>",
      "ask|accept-edits|auto: what `inherit` resolves to at tool time",
    )
    .action(async (opts: { defaultMode?: string; defaultPermissionMode?: string }, cmd: Command) => {
      const params = settingsSetParams(opts);
      const r = await (await bus(run)).call("settings.set", params);
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatSettings(r));
    });
}
