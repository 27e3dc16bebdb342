// `pihost plugins list|register|enable|disable`: tool plugins the host offers Agent turns (plugins.*).
import type { Command } from "commander";
import { formatPlugin, formatPluginList } from "../admin-format.ts";
import { pluginsRegisterParams } from "../admin-params.ts";
import { UsageError } from "../cli-error.ts";
import { bus, isJson, out, outJson, type Run } from "../cli-run.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";

export function addPluginCommands(program: Command, run: Run): void {
  const plugins = program.command("plugins").description("tool plugins offered to Agent turns");
  listOptions(
    plugins.command("list").description("registered plugins by id, their tools and whether they are enabled"),
    "plugins.list",
  ).action(async (opts: ListCli, cmd: Command) => {
    await runList(run, cmd, "plugins.list", {}, opts, {
      format: formatPluginList,
      empty: "no plugins registered",
      command: "pihost plugins list",
    });
  });
  plugins
    .command("register")
    .description(
      "register or replace a plugin from its manifest file (JSON: id, name, tools); enabled (settings admins only outside development mode)",
    )
    .argument("<manifest.json>")
    .action(async (file: string, _opts: unknown, cmd: Command) => {
      const params = pluginsRegisterParams(await readManifest(run, file), file);
      const r = await (await bus(run)).call("plugins.register", params);
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatPlugin(r));
    });
  for (const [name, what] of [
    ["enable", "offer the plugin's tools again (an enabled plugin stays enabled)"],
    ["disable", "stop offering the plugin's tools at once (a disabled plugin stays disabled)"],
  ] as const) {
    plugins
      .command(name)
      .description(`${what}; settings admins only outside development mode`)
      .argument("<pluginId>")
      .action(async (pluginId: string, _opts: unknown, cmd: Command) => {
        const r = await (await bus(run)).call(`plugins.${name}`, { pluginId });
        if (isJson(cmd)) outJson(run, r);
        else out(run, formatPlugin(r));
      });
  }
}

async function readManifest(run: Run, file: string): Promise<unknown> {
  let text: string;
  try {
    text = await run.deps.readFile(file);
  } catch (cause) {
    throw new UsageError(`cannot read ${file}: ${(cause as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new UsageError(`${file} is not JSON: ${(cause as Error).message}`);
  }
}
