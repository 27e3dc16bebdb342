// `pihost project create|show|configure`: workspace projects and their tool settings.
import type { Command } from "commander";
import { projectConfigureParams, projectCreateParams } from "../cli-params.ts";
import { bus, collect, isJson, out, outJson, type Run } from "../cli-run.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";
import { formatProject, formatProjectCreated, formatProjectList } from "../view-format.ts";
import { addMemberCommands } from "./members.ts";

export function addProjectCommands(program: Command, run: Run): void {
  const project = program.command("project").description("workspace projects");
  project
    .command("create")
    .description("create a project on a workspace folder (made absolute)")
    .requiredOption("--name <name>", "project name")
    .requiredOption("--root <dir>", "workspace folder, under one of the host's workspace roots")
    .option("-q, --quiet", "print only the new project id")
    .action(async (opts: { name: string; root: string; quiet?: boolean }, cmd: Command) => {
      const params = projectCreateParams(opts, run.deps.cwd);
      const p = await (await bus(run)).call("projects.create", params);
      if (isJson(cmd)) outJson(run, p);
      else if (opts.quiet) out(run, [p.id]);
      else out(run, formatProjectCreated(p));
    });
  listOptions(
    project
      .command("list")
      .description("the projects you are a member of, newest membership first, and who added you"),
    "projects.list",
  ).action(async (opts: ListCli, cmd: Command) => {
    await runList(run, cmd, "projects.list", {}, opts, {
      format: formatProjectList,
      empty: "you are a member of no project",
      command: "pihost project list",
    });
  });
  project
    .command("show")
    .description("show a project and its tool settings")
    .argument("<projectId>")
    .action(async (projectId: string, _opts: unknown, cmd: Command) => {
      const p = await (await bus(run)).call("projects.get", { projectId });
      if (isJson(cmd)) outJson(run, p);
      else out(run, formatProject(p));
    });
  project
    .command("configure")
    .description("change a project's tool settings (settings admins only outside development mode)")
    .argument("<projectId>")
    .option(
      "--network <on|off>",
      "user-mode networking for the project's Bash sandboxes (host loopback stays closed)",
    )
    .option(
      "--preview-origin <origin>",
      "an origin BrowserPreview may load, repeatable; replaces the list",
      collect,
      [],
    )
    .option("--clear-preview-origins", "BrowserPreview loads loopback and workspace files only")
    .option("--expect-version <n>", "refuse unless the project is still at this version")
    .action(
      async (
        projectId: string,
        opts: {
          network?: string;
          previewOrigin?: string[];
          clearPreviewOrigins?: boolean;
          expectVersion?: string;
        },
        cmd: Command,
      ) => {
        const params = projectConfigureParams(projectId, opts);
        const p = await (await bus(run)).call("projects.configure", params);
        if (isJson(cmd)) outJson(run, p);
        else out(run, formatProject(p));
      },
    );
  addMemberCommands(project, run);
}
