// The tool runner, built once from the host's configuration: runs the built-in tools (file tools in
// workspace-files.ts, Bash in the sandbox, BrowserPreview, new_context) in the workspace each call
// names, under that workspace's lock (workspace-lock.ts). Bash never runs unconfined.
import { promises as fs } from "node:fs";
import type { BuiltinToolName } from "../../../machines/tool-policy.ts";
import { AppError } from "../../protocol/app-error.ts";
import type { ToolExecuteResult } from "../../protocol/schemas.ts";
import { bashDefaultTimeoutMs, runBash } from "./bash-runner.ts";
import { runBrowserPreview, runNewContext } from "./browser-preview.ts";
import { type SandboxSettings, sandboxSettingsFromEnv } from "./sandbox.ts";
import { confine, readBytes, runFileTool } from "./workspace-files.ts";
import { withWorkspaceLock } from "./workspace-lock.ts";

export { MAX_READ_BYTES } from "./workspace-files.ts";

/** What the process environment says about running tools; read once, at start (host-config). */
export interface ToolRunnerConfig {
  /** The sandbox of Bash and BrowserPreview: its user, the data folder (scratch), slirp4netns. */
  sandbox: SandboxSettings;
  /** Bash's timeout when a call names none (PI_BASH_DEFAULT_TIMEOUT_MS, else 60 s). */
  bashDefaultTimeoutMs: number;
}

/** The runner's configuration from an environment (docs/operations.md lists the variables). */
export function toolRunnerConfigFromEnv(env: NodeJS.ProcessEnv = process.env): ToolRunnerConfig {
  return { sandbox: sandboxSettingsFromEnv(env), bashDefaultTimeoutMs: bashDefaultTimeoutMs(env) };
}

/** What a running tool may report while it runs (Bash streams stdout and stderr as it goes). */
export interface ToolRunContext {
  onOutput?: (stream: "stdout" | "stderr", text: string) => void;
  /** Aborting it kills a running Bash command and all it started. */
  signal?: AbortSignal;
  /** The calling session: Bash gets `<PI_DATA_DIR>/scratch/<sessionId>` (a throwaway one without it). */
  sessionId?: string;
}

/** The durable settings of one call's workspace, read per call by the caller. */
export interface ToolRunnerOptions {
  workspaceRoot: string;
  /** The project allows network: Bash's sandbox gets user-mode networking (slirp4netns). */
  network?: boolean;
  /** Origins (canonical `scheme://host[:port]`) BrowserPreview may load besides loopback and workspace files. */
  previewOrigins?: readonly string[];
}

export type ToolCallContext = ToolRunnerOptions & ToolRunContext;

export interface ToolRunner {
  /** Runs one built-in tool; refusals of the arguments or the path throw AppError (TOOL_NOT_FOUND for others). */
  run(tool: string, args: Record<string, unknown>, ctx: ToolCallContext): Promise<ToolExecuteResult>;
}

/** The built-in tools this runner runs; the plan tools are the host's own (never run here). */
type RunnableTool = Exclude<BuiltinToolName, "EnterPlanMode" | "ExitPlanMode">;
type ToolImpl = (
  args: Record<string, unknown>,
  root: string,
  ctx: ToolCallContext,
  config: ToolRunnerConfig,
) => Promise<ToolExecuteResult>;

const RUNNABLE: Record<RunnableTool, ToolImpl> = {
  Read: (args, root) => runFileTool("Read", args, root),
  Glob: (args, root) => runFileTool("Glob", args, root),
  Grep: (args, root) => runFileTool("Grep", args, root),
  Write: (args, root) => runFileTool("Write", args, root),
  Edit: (args, root) => runFileTool("Edit", args, root),
  Bash: (args, root, ctx, config) =>
    runBash(args, {
      workspace: root,
      network: ctx.network === true,
      settings: config.sandbox,
      defaultTimeoutMs: config.bashDefaultTimeoutMs,
      ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
      ...(ctx.onOutput ? { onOutput: ctx.onOutput } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    }),
  BrowserPreview: (args, root, ctx, config) =>
    runBrowserPreview(args, {
      workspace: root,
      allowedOrigins: ctx.previewOrigins ?? [],
      confine: (p) => confine(root, p, false),
      readFile: readBytes,
      settings: config.sandbox,
      ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    }),
  new_context: async (args) => runNewContext(args),
};

function isRunnable(tool: string): tool is RunnableTool {
  return Object.hasOwn(RUNNABLE, tool);
}

/**
 * The host's tool runner, built once: `config` comes from host-config (read at start); without one,
 * from this process's environment, read now.
 */
export function createToolRunner(config: ToolRunnerConfig = toolRunnerConfigFromEnv()): ToolRunner {
  const runner: ToolRunner = {
    async run(tool, args, ctx) {
      const root = await fs.realpath(ctx.workspaceRoot).catch((cause: unknown) => {
        throw new AppError("TOOL_FAILED", "the workspace folder is not reachable", { cause });
      });
      return withWorkspaceLock(root, () => {
        if (!isRunnable(tool)) throw new AppError("TOOL_NOT_FOUND");
        return RUNNABLE[tool](args, root, ctx, config);
      });
    },
  };
  return runner;
}
