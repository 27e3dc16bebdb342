// What every command shares: the run (deps, exit code, the one bus connection), output, JSON mode,
// and reading a --script file. Following events is follow.ts.
import type { Command } from "commander";
import type { CliBus } from "./cli-bus.ts";
import { type CliConfig, readCliConfig } from "./cli-config.ts";
import { UsageError } from "./cli-error.ts";

export interface CliDeps {
  env: NodeJS.ProcessEnv;
  cwd: string;
  osUserName: string | undefined;
  stdout(text: string): void;
  stderr(text: string): void;
  connect(config: CliConfig): Promise<CliBus>;
  readFile(file: string): Promise<string>;
  /** The terminal's input, for questions asked inline (tty-prompts.ts); absent: nothing is asked. */
  stdin?: NodeJS.ReadableStream;
  stdinIsTTY?: boolean;
  /** Whether stdout is a terminal: questions, and colour unless NO_COLOR (terminal-text.ts). */
  stdoutIsTTY?: boolean;
  /** Whether stderr is a terminal (colour of errors and warnings). */
  stderrIsTTY?: boolean;
  /** Tests only: how long a follower waits before saying no worker claimed the turn (CLAIM_NOTICE_MS). */
  claimNoticeMs?: number;
  /** Tests only: how long nothing may happen before a follower says what it waits for (WAIT_NOTICE_MS). */
  waitNoticeMs?: number;
}

export const DEFAULT_TIMEOUT_SECONDS = "300";
/** Every surface that offers Plan says this (docs/operations.md). */
export const PLAN_NOTE =
  "plan is planning intent, not a sandbox: Bash still runs under the permission mode and can change files under auto";

export interface Run {
  deps: CliDeps;
  exitCode: number;
  bus: CliBus | null;
  /** --json anywhere on the command line (known before commander parses it, for usage errors). */
  json: boolean;
}

export function out(run: Run, lines: string[]): void {
  for (const line of lines) run.deps.stdout(`${line}\n`);
}

export function outJson(run: Run, value: unknown): void {
  run.deps.stdout(`${JSON.stringify(value)}\n`);
}

export async function bus(run: Run): Promise<CliBus> {
  if (run.bus === null) run.bus = await run.deps.connect(readCliConfig(run.deps.env, run.deps.osUserName));
  return run.bus;
}

export function isJson(cmd: Command): boolean {
  return cmd.optsWithGlobals<{ json?: boolean }>().json === true;
}

export function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

export async function readJson(run: Run, file: string): Promise<unknown> {
  let text: string;
  try {
    text = await run.deps.readFile(file);
  } catch (cause) {
    throw new UsageError(`cannot read --script ${file}: ${(cause as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (cause) {
    throw new UsageError(`--script ${file} is not JSON: ${(cause as Error).message}`);
  }
}
