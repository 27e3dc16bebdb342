// The admin command groups of `pihost`: app settings, scheduled tasks, plugins and the audit log
// (one file each beside this one). Project members hang under `project` (members.ts).
import type { Command } from "commander";
import type { Run } from "../cli-run.ts";
import { addAuditCommand } from "./audit.ts";
import { addPluginCommands } from "./plugins.ts";
import { addScheduledCommands } from "./scheduled.ts";
import { addSettingsCommands } from "./settings.ts";

export function addAdminCommands(program: Command, run: Run): void {
  addSettingsCommands(program, run);
  addScheduledCommands(program, run);
  addPluginCommands(program, run);
  addAuditCommand(program, run);
}
