// The tool runner, built once from the host's configuration: runs the built-in tools in the workspace
// each call names, under that workspace's lock (workspace-lock.ts). Nothing runs with the host's
// privileges: the file tools run in the session's sandboxed file helper (file-helper/), Bash and
// BrowserPreview's browser in their own sandboxes (docs/security.md).
import { randomBytes } from "node:crypto";
import { promises as fs } from "node:fs";
import type { BuiltinToolName } from "../../../machines/tool-policy.ts";
import { AppError } from "../../protocol/app-error.ts";
import type { ToolExecuteResult } from "../../protocol/schemas.ts";
import { type Result, unwrap } from "../../protocol/result.ts";
import { bashDefaultTimeoutMs, runBash } from "./bash-runner.ts";
import { runBrowserPreview, runNewContext } from "./browser-preview.ts";
import { createFileHelpers, type FileHelpers, type FileHelpersOptions } from "./file-helper/file-helpers.ts";
import { type SandboxSettings, sandboxSettingsFromEnv } from "./sandbox.ts";
import type { FileToolName } from "./workspace-files.ts";
import { withWorkspaceLock } from "./workspace-lock.ts";

/** What the process environment says about running tools; read once, at start (host-config). */
export interface ToolRunnerConfig {
  /** The sandbox of Bash and BrowserPreview: its user, the data folder (scratch), slirp4netns. */
  sandbox: SandboxSettings;
  /** Bash's timeout when a call names none (PI_BASH_DEFAULT_TIMEOUT_MS, else 60 s). */
  bashDefaultTimeoutMs: number;
  /** The file helpers' bounds (idle time, count, call timeout); defaults in file-helpers.ts. */
  fileHelpers?: FileHelpersOptions;
  /**
   * Several hosts: the workspace lock across hosts (a Postgres advisory lock the host passes in);
   * held inside this process's own lock, for the tool's duration. Without it, this process only.
   */
  crossHostLock?: <T>(workspace: string, fn: () => Promise<T>) => Promise<Result<T>>;
  /** The pi-host HTTP listeners BrowserPreview pages may not reach, read at each preview (main.ts). */
  previewBlocked?: () => Promise<readonly string[]>;
}

/** The runner's configuration from an environment (docs/operations.md lists the variables). */
export function toolRunnerConfigFromEnv(env: NodeJS.ProcessEnv): ToolRunnerConfig {
  const grep = Number(env.PI_GREP_TIMEOUT_MS);
  return {
    sandbox: sandboxSettingsFromEnv(env),
    bashDefaultTimeoutMs: bashDefaultTimeoutMs(env),
    // Grep's time bound inside the helper (PI_GREP_TIMEOUT_MS, else 10 s; anything unusable: 10 s).
    ...(Number.isInteger(grep) && grep > 0 ? { fileHelpers: { grepTimeoutMs: grep } } : {}),
  };
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
  /** `*.md` names in `<workspace>/.pi/plan`, listed by a sandboxed helper (the orphan-artifact scan). */
  listPlanFiles(workspaceRoot: string): Promise<string[]>;
  /** Ends every file helper (host shutdown). */
  close(): Promise<void>;
}

/** The built-in tools this runner runs; the plan tools are the host's own (never run here). */
type RunnableTool = Exclude<BuiltinToolName, "EnterPlanMode" | "ExitPlanMode">;
interface RunDeps {
  config: ToolRunnerConfig;
  helpers: FileHelpers;
}
type ToolImpl = (
  args: Record<string, unknown>,
  root: string,
  ctx: ToolCallContext,
  deps: RunDeps,
) => Promise<ToolExecuteResult>;

/** The helper a call without a session uses: one per workspace. */
const NO_SESSION = "workspace";

const fileTool =
  (tool: FileToolName): ToolImpl =>
  (args, root, ctx, { helpers }) =>
    helpers.call(
      ctx.sessionId ?? NO_SESSION,
      root,
      { op: "tool", tool, args },
      ctx.signal ? { signal: ctx.signal } : {},
    );

const RUNNABLE: Record<RunnableTool, ToolImpl> = {
  Read: fileTool("Read"),
  Glob: fileTool("Glob"),
  Grep: fileTool("Grep"),
  Write: fileTool("Write"),
  Edit: fileTool("Edit"),
  Bash: (args, root, ctx, { config }) =>
    runBash(args, {
      workspace: root,
      network: ctx.network === true,
      settings: config.sandbox,
      defaultTimeoutMs: config.bashDefaultTimeoutMs,
      ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
      ...(ctx.onOutput ? { onOutput: ctx.onOutput } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    }),
  BrowserPreview: (args, root, ctx, { config, helpers }) =>
    runBrowserPreview(args, {
      workspace: root,
      allowedOrigins: ctx.previewOrigins ?? [],
      // The page's workspace files come from the session's file helper (confined, as the sandbox user).
      readWorkspaceFile: (p) =>
        helpers.call(ctx.sessionId ?? NO_SESSION, root, { op: "previewFile", path: p }),
      settings: config.sandbox,
      ...(config.previewBlocked ? { blockedListeners: config.previewBlocked } : {}),
      ...(ctx.sessionId ? { sessionId: ctx.sessionId } : {}),
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    }),
  new_context: async (args) => runNewContext(args),
};

/** Tools that change nothing in the workspace: never ordered against the others (no lock). */
const READ_ONLY: ReadonlySet<string> = new Set<RunnableTool>([
  "Read",
  "Glob",
  "Grep",
  "BrowserPreview",
  "new_context",
]);

function isRunnable(tool: string): tool is RunnableTool {
  return Object.hasOwn(RUNNABLE, tool);
}

/** The host's tool runner, built once: `config` comes from host-config (read at start). */
export function createToolRunner(config: ToolRunnerConfig): ToolRunner {
  const helpers = createFileHelpers(config.sandbox, config.fileHelpers);
  const deps: RunDeps = { config, helpers };
  const runner: ToolRunner = {
    async run(tool, args, ctx) {
      const root = await recordedRoot(ctx.workspaceRoot);
      const run = () => {
        if (!isRunnable(tool)) throw new AppError("TOOL_NOT_FOUND");
        return RUNNABLE[tool](args, root, ctx, deps);
      };
      // Tools that only read run at once: they run as the sandbox user in a sandbox bound to this
      // workspace, so no symlink a Bash command plants can take them outside it. Those that change
      // the workspace (Write, Edit, Bash) run one at a time per workspace, across hosts too.
      if (READ_ONLY.has(tool)) return run();
      const across = config.crossHostLock;
      // A wait for another host's tool that ran out is HOST_OVERLOADED, thrown as this runner's refusals are.
      return withWorkspaceLock(root, async () => (across ? unwrap(await across(root, run)) : run()));
    },
    async listPlanFiles(workspaceRoot) {
      const root = await recordedRoot(workspaceRoot);
      // A helper of its own, stopped at once: the scan runs once, at start.
      const scan = createFileHelpers(config.sandbox, { ...config.fileHelpers, maxHelpers: 1 });
      try {
        return (await scan.call(`scan-${randomBytes(6).toString("hex")}`, root, { op: "listPlanFiles" }))
          .names;
      } finally {
        await scan.close();
      }
    },
    close: () => helpers.close(),
  };
  return runner;
}

/**
 * The workspace root as recorded at projects.create (a real path). It is never resolved again: a
 * root that is no longer that folder (replaced by a symlink, gone) is refused, not followed.
 */
async function recordedRoot(workspaceRoot: string): Promise<string> {
  const real = await fs.realpath(workspaceRoot).catch((cause: unknown) => {
    throw new AppError("WORKSPACE_NOT_USABLE", "the workspace folder is not reachable", { cause });
  });
  if (real !== workspaceRoot)
    throw new AppError(
      "WORKSPACE_NOT_USABLE",
      "the workspace root is no longer the folder the project was created on (it resolves elsewhere)",
      { details: { workspaceRoot } },
    );
  return real;
}
