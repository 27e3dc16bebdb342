// The CLI's command tree run in-process for unit tests, on a bus double (or none: a usage error
// must not connect), with files to read; returns the exit code and what was printed.
import type { CliBus } from "./cli-bus.ts";
import type { CliConfig } from "./cli-config.ts";
import { type CliDeps, runCli } from "./cli-program.ts";

export async function cli(
  args: string[],
  bus: CliBus | null,
  files: Record<string, string> = {},
  extra: Partial<CliDeps> = {},
) {
  let stdout = "";
  let stderr = "";
  const configs: CliConfig[] = [];
  const deps: CliDeps = {
    env: { PI_PREFIX: "tp", PI_PRINCIPAL: "alice" },
    cwd: "/home/alice",
    osUserName: "alice",
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    connect: async (config) => {
      configs.push(config);
      if (!bus) throw new Error("connect must not be called");
      return bus;
    },
    readFile: async (file) => {
      const text = files[file];
      if (text === undefined) throw new Error(`ENOENT: ${file}`);
      return text;
    },
    ...extra,
  };
  const code = await runCli(args, deps);
  return { code, stdout, stderr, connected: configs.length > 0 };
}
