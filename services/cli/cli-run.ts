// What every command shares: the run (deps, exit code, the one bus connection), output, JSON mode,
// following a turn's events, and reading a --script file.
import type { Command } from "commander";
import type { SessionEvent } from "../protocol/events.ts";
import type { CliBus, EventSubscription } from "./cli-bus.ts";
import { type CliConfig, readCliConfig } from "./cli-config.ts";
import { CliError, UsageError } from "./cli-error.ts";
import { approvalHintLines, formatEvent } from "./event-format.ts";
import { type FollowState, followEvent } from "./turn-follower.ts";

export interface CliDeps {
  env: NodeJS.ProcessEnv;
  cwd: string;
  osUserName: string | undefined;
  stdout(text: string): void;
  stderr(text: string): void;
  connect(config: CliConfig): Promise<CliBus>;
  readFile(file: string): Promise<string>;
  /** Tests only: how long a follower waits before saying no worker claimed the turn (CLAIM_NOTICE_MS). */
  claimNoticeMs?: number;
}

export const DEFAULT_TIMEOUT_SECONDS = "300";
/** Every surface that offers Plan says this (docs/operations.md). */
export const PLAN_NOTE =
  "plan is planning intent, not a sandbox: Bash still runs under the permission mode and can change files under auto";

export interface Run {
  deps: CliDeps;
  exitCode: number;
  bus: CliBus | null;
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

/** How long a follower waits for a worker to claim the followed turn before it says none has. */
export const CLAIM_NOTICE_MS = 5_000;

/**
 * Prints what follows `state` until it is done; a deadline passing is a local TIMEOUT (exit 1).
 * A followed turn no worker has claimed within CLAIM_NOTICE_MS is said plainly, once.
 */
export async function follow(
  run: Run,
  sub: EventSubscription,
  state0: FollowState,
  ms: number,
  json: boolean,
) {
  const deadline = Date.now() + ms;
  let state = state0;
  let claimed = false;
  let noticeAt: number | null = Date.now() + (run.deps.claimNoticeMs ?? CLAIM_NOTICE_MS);
  for (;;) {
    const e: SessionEvent | null = await sub.next(
      noticeAt !== null ? Math.min(noticeAt, deadline) : deadline,
    );
    if (e === null && noticeAt !== null && Date.now() < deadline) {
      noticeAt = null;
      if (!claimed) {
        const what =
          state.target.turnId ?? `the execution of ${(state.target as { proposalId: string }).proposalId}`;
        const notice = `waiting: no worker has claimed ${what} yet; is an agent worker running that serves this session's model? (pihost models)`;
        if (json) run.deps.stderr(`${JSON.stringify({ notice: "NO_WORKER_CLAIMED", message: notice })}\n`);
        else out(run, [notice]);
      }
      continue;
    }
    if (
      e?.type === "turn.claimed" &&
      (state.target.turnId === null || (e as SessionEvent<"turn.claimed">).turnId === state.target.turnId)
    )
      claimed = true;
    if (e === null) {
      const what =
        state.target.kind === "turn"
          ? `turn ${state.target.turnId}`
          : `the execution of ${state.target.proposalId}`;
      throw new CliError(
        "TIMEOUT",
        `${what} did not finish within ${Math.round(ms / 1000)} s; it keeps running on the host (see pihost session show)`,
      );
    }
    const step = followEvent(state, e);
    state = step.state;
    if (step.show) {
      if (json) outJson(run, e);
      else out(run, formatEvent(e));
    }
    if (step.done) {
      if (step.done.proposal && !json) out(run, approvalHintLines(step.done.proposal));
      return step.done.exitCode;
    }
  }
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
