// The Bash tool: `{command: string, timeout?: integer seconds}` run in the sandbox (sandbox.ts), its
// output streamed while it runs and bounded in the result.
import { randomBytes } from "node:crypto";
import { promises as fs, readFileSync } from "node:fs";
import path from "node:path";
import { StringDecoder } from "node:string_decoder";
import { toolResult } from "../../protocol/result.ts";
import { AppError } from "../../protocol/app-error.ts";
import type { ErrorCode } from "../../protocol/error-codes.ts";
import type { ToolExecuteResult } from "../../protocol/schemas.ts";
import { type SandboxSettings, startSandbox } from "./sandbox.ts";

export const BASH_DEFAULT_TIMEOUT_MS = 60_000;
export const BASH_MIN_TIMEOUT_S = 1;
export const BASH_MAX_TIMEOUT_S = 300;
/** Longest command accepted, in UTF-8 bytes: it is one argument of the sandbox's bash, and Linux
 * refuses a single argument over 128 KiB (MAX_ARG_STRLEN) at exec. */
export const BASH_MAX_COMMAND_BYTES = 100_000;
/** Starts of the sandbox one call may take when bwrap fails before the command ran. */
export const BASH_SANDBOX_ATTEMPTS = 2;
/** Bytes of each stream kept in the final result. */
export const MAX_RESULT_BYTES = 64 * 1024;
/** Bytes of each stream streamed as tool.output events; the rest is counted, not sent. */
export const MAX_STREAMED_BYTES = 1024 * 1024;

export type OutputStream = "stdout" | "stderr";

export interface BashContext {
  workspace: string;
  /** The session whose scratch folder the command gets; absent, a throwaway one is used. */
  sessionId?: string;
  onOutput?: (stream: OutputStream, text: string) => void;
  signal?: AbortSignal;
  /** The sandbox's configuration (the tool runner's, read once at start). */
  settings: SandboxSettings;
  /** The timeout of a call that names none; BASH_DEFAULT_TIMEOUT_MS without it. */
  defaultTimeoutMs?: number;
  /** The project allows network: the sandbox gets user-mode networking (slirp4netns). */
  network?: boolean;
}

/** Bash's default timeout from an environment (PI_BASH_DEFAULT_TIMEOUT_MS; anything unusable: 60 s). */
export function bashDefaultTimeoutMs(env: NodeJS.ProcessEnv): number {
  const raw = env.PI_BASH_DEFAULT_TIMEOUT_MS;
  const n = raw ? Number(raw) : BASH_DEFAULT_TIMEOUT_MS;
  return Number.isInteger(n) && n > 0 ? n : BASH_DEFAULT_TIMEOUT_MS;
}

const result = (code: ErrorCode | null, text: string, details: Record<string, unknown>) =>
  toolResult(code, text, details);

/** Validates the arguments; returns the refusal to report or the command and timeout in ms. */
export function parseBashArgs(
  args: Record<string, unknown>,
  defaultTimeoutMs: number,
): { command: string; timeoutMs: number } | ToolExecuteResult {
  const { command, timeout } = args;
  if (typeof command !== "string" || command.trim() === "")
    return result("INVALID_PARAMS", "command must be a non-empty string", { field: "command" });
  if (Buffer.byteLength(command) > BASH_MAX_COMMAND_BYTES)
    return result(
      "INVALID_PARAMS",
      `command must be at most ${BASH_MAX_COMMAND_BYTES} bytes; write a script file instead`,
      {
        field: "command",
        max: BASH_MAX_COMMAND_BYTES,
        got: Buffer.byteLength(command),
      },
    );
  if (command.includes("\0"))
    return result("INVALID_PARAMS", "command must not contain NUL characters", { field: "command" });
  if (timeout === undefined) return { command, timeoutMs: defaultTimeoutMs };
  if (
    typeof timeout !== "number" ||
    !Number.isInteger(timeout) ||
    timeout < BASH_MIN_TIMEOUT_S ||
    timeout > BASH_MAX_TIMEOUT_S
  ) {
    return result(
      "INVALID_PARAMS",
      `timeout must be an integer number of seconds from ${BASH_MIN_TIMEOUT_S} to ${BASH_MAX_TIMEOUT_S}`,
      { field: "timeout", min: BASH_MIN_TIMEOUT_S, max: BASH_MAX_TIMEOUT_S, got: timeout ?? null },
    );
  }
  return { command, timeoutMs: timeout * 1000 };
}

class Collected {
  kept: Buffer[] = [];
  keptBytes = 0;
  total = 0;
  streamed = 0;
  readonly decoder = new StringDecoder("utf8");

  add(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.keptBytes < MAX_RESULT_BYTES) {
      const part = chunk.subarray(0, MAX_RESULT_BYTES - this.keptBytes);
      this.kept.push(part);
      this.keptBytes += part.length;
    }
  }

  text(): string {
    const s = new StringDecoder("utf8").end(Buffer.concat(this.kept));
    return this.total > this.keptBytes
      ? `${s}\n[output truncated: ${this.total - this.keptBytes} of ${this.total} bytes not shown]`
      : s;
  }
}

function isGone(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return /\)\s+[ZX]\s/.test(stat);
  } catch {
    return true;
  }
}

/**
 * Runs a Bash tool call in the sandbox. Argument and sandbox refusals are results, not throws. The
 * timeout defaults to 60 s (PI_BASH_DEFAULT_TIMEOUT_MS overrides it, for fast tests) and is accepted
 * from 1 to 300 s; anything else is INVALID_PARAMS before anything is spawned. stdout and stderr
 * stream separately through onOutput while the command runs; the result keeps at most
 * MAX_RESULT_BYTES of each with a truncation marker. A timeout (TOOL_TIMEOUT) or an abort kills the
 * sandbox, which ends every descendant; nothing is reported after the result.
 */
export async function runBash(args: Record<string, unknown>, ctx: BashContext): Promise<ToolExecuteResult> {
  const { settings } = ctx;
  if (ctx.sessionId) return runBashIn(args, ctx, settings, ctx.sessionId);
  // Without a session the scratch folder is this call's alone and goes away with it.
  const sessionId = `call-${randomBytes(9).toString("base64url")}`;
  try {
    return await runBashIn(args, ctx, settings, sessionId);
  } finally {
    await fs.rm(path.join(settings.dataDir, "scratch", sessionId), { recursive: true, force: true });
  }
}

type Sandbox = Awaited<ReturnType<typeof startSandbox>>;

/**
 * One call's sandbox while it runs: each stream's output, whether the command has reported (fd 4)
 * that it runs in the finished sandbox (`live`), whether the run is over (`ended`), the output held
 * back until then, and why the sandbox was killed, if it was.
 */
interface BashRun {
  ctx: BashContext;
  sandbox: Sandbox;
  out: { stdout: Collected; stderr: Collected };
  live: boolean;
  ended: boolean;
  pending: Array<[OutputStream, Buffer]>;
  reason: "timeout" | "abort" | null;
}

async function runBashIn(
  args: Record<string, unknown>,
  ctx: BashContext,
  settings: SandboxSettings,
  sessionId: string,
  attempt = 1,
): Promise<ToolExecuteResult> {
  const parsed = parseBashArgs(args, ctx.defaultTimeoutMs ?? BASH_DEFAULT_TIMEOUT_MS);
  if ("content" in parsed) return parsed;
  if (ctx.signal?.aborted) return result("TURN_ABORTED", "the call was aborted before it started", {});
  let sandbox: Sandbox;
  try {
    sandbox = await startSandbox({
      workspace: ctx.workspace,
      sessionId,
      command: parsed.command,
      settings,
      network: ctx.network === true,
    });
  } catch (err) {
    if (err instanceof AppError && err.code === "SANDBOX_UNAVAILABLE")
      return result("SANDBOX_UNAVAILABLE", err.message, err.details ?? {});
    throw err;
  }
  // Output that arrives before the command reports (fd 4) that it runs in the finished sandbox is
  // held back: a sandbox that fails to start streams nothing, and bwrap's own errors stay out.
  const run: BashRun = {
    ctx,
    sandbox,
    out: { stdout: new Collected(), stderr: new Collected() },
    live: false,
    ended: false,
    pending: [],
    reason: null,
  };
  sandbox.stdout.on("data", onData(run, "stdout"));
  sandbox.stderr.on("data", onData(run, "stderr"));
  const exit = await runToEnd(run, parsed.timeoutMs);
  const outcome = bashResult(run, exit, parsed.timeoutMs, attempt);
  if (outcome === "retry") return runBashIn(args, ctx, settings, sessionId, attempt + 1);
  return outcome;
}

function emit(run: BashRun, stream: OutputStream, chunk: Buffer): void {
  const { ctx } = run;
  const c = run.out[stream];
  c.add(chunk);
  if (!ctx.onOutput || c.streamed >= MAX_STREAMED_BYTES) return;
  const part = chunk.subarray(0, MAX_STREAMED_BYTES - c.streamed);
  c.streamed += part.length;
  const text = c.decoder.write(part);
  if (text) ctx.onOutput(stream, text);
  if (c.streamed >= MAX_STREAMED_BYTES)
    ctx.onOutput(stream, "\n[streamed output truncated; the rest is counted, not sent]\n");
}

function onData(run: BashRun, stream: OutputStream) {
  return (chunk: Buffer) => {
    if (run.ended) return;
    if (run.live) emit(run, stream, chunk);
    else run.pending.push([stream, chunk]);
  };
}

function kill(run: BashRun, why: "timeout" | "abort"): void {
  if (run.reason || run.ended) return;
  run.reason = why;
  // The sandbox's first process is init of its PID namespace: its death ends every descendant.
  const firstPid = run.sandbox.firstPid();
  if (firstPid) {
    try {
      process.kill(firstPid, "SIGKILL");
    } catch {}
  }
  run.sandbox.child.kill("SIGKILL");
}

/**
 * Streams the run's output once it is live, kills it at the timeout or on abort, and waits until
 * the sandbox and its output are gone; returns how bwrap exited.
 */
async function runToEnd(
  run: BashRun,
  timeoutMs: number,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const { ctx, sandbox, out } = run;
  const timer = setTimeout(() => kill(run, "timeout"), timeoutMs);
  const onAbort = () => kill(run, "abort");
  ctx.signal?.addEventListener("abort", onAbort, { once: true });
  if (ctx.signal?.aborted) onAbort();

  const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    sandbox.child.on("close", (code, signal) => resolve({ code, signal })),
  );
  if (await sandbox.started) {
    run.live = true;
    for (const [stream, chunk] of run.pending.splice(0)) emit(run, stream, chunk);
  }
  const exit = await closed;
  clearTimeout(timer);
  ctx.signal?.removeEventListener("abort", onAbort);
  // The output pipes end once every writer in the sandbox is gone (the whole sandbox dies with its
  // first process); bounded all the same, in case something outside kept a copy.
  await Promise.race([sandbox.outputEnded, new Promise((r) => setTimeout(r, 2000))]);
  if (!run.live) {
    // Data events of the pipes may still be queued when close is reported: they were bwrap's own.
    for (const [stream, chunk] of run.pending.splice(0)) out[stream].add(chunk);
  }
  const firstPid = sandbox.firstPid();
  if (firstPid) {
    // Wait (briefly) until the namespace's init is really gone.
    const deadline = Date.now() + 2000;
    while (!isGone(firstPid) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  }
  run.ended = true;
  for (const s of ["stdout", "stderr"] as const) {
    if (!run.live) continue;
    const tail = out[s].decoder.end();
    if (tail && ctx.onOutput && out[s].streamed < MAX_STREAMED_BYTES) ctx.onOutput(s, tail);
  }
  sandbox.stdout.destroy();
  sandbox.stderr.destroy();
  return exit;
}

/** The call's result from how the run ended, or "retry" for a sandbox that never came up. */
function bashResult(
  run: BashRun,
  exit: { code: number | null; signal: NodeJS.Signals | null },
  timeoutMs: number,
  attempt: number,
): ToolExecuteResult | "retry" {
  const { ctx, sandbox, out, live, reason } = run;
  const details = {
    exitCode: exit.code,
    stdout: out.stdout.text(),
    stderr: out.stderr.text(),
    stdoutBytes: out.stdout.total,
    stderrBytes: out.stderr.total,
  };
  const failure = sandbox.failure();
  if (!live && failure)
    return result("SANDBOX_UNAVAILABLE", `${failure}; nothing ran`, { reason: failure, network: true });
  if (!live && !reason) {
    // The command never ran (it waits at the gate until the sandbox reports it is up), so a sandbox
    // that failed to come up is tried once more: bwrap's namespace setup fails now and then under
    // heavy load (a loopback address the kernel refused) and works the next time.
    if (attempt < BASH_SANDBOX_ATTEMPTS && !ctx.signal?.aborted) return "retry";
    // bwrap's own words (a folder it could not bind, a namespace it may not create) are the real
    // reason: the person reads it in the result, not only in a database row.
    const said = details.stderr.trim().split("\n").slice(-5).join("\n").slice(0, 2000);
    return result(
      "SANDBOX_UNAVAILABLE",
      `the sandbox did not start, nothing ran: ${said || `bwrap exited with ${exit.code ?? exit.signal}`}`,
      {
        reason: said || "bwrap failed to start",
        bwrapExitCode: exit.code,
        bwrapStderr: details.stderr,
        attempts: attempt,
      },
    );
  }
  if (reason === "timeout")
    return result("TOOL_TIMEOUT", `the command ran past ${timeoutMs} ms and was killed`, {
      ...details,
      exitCode: null,
      timeoutMs,
    });
  if (reason === "abort")
    return result("TURN_ABORTED", "the call was aborted; the command was killed", {
      ...details,
      exitCode: null,
    });
  const body = [details.stdout, details.stderr ? `[stderr]\n${details.stderr}` : ""]
    .filter(Boolean)
    .join("\n");
  if (exit.code !== 0)
    return result("TOOL_FAILED", `exit code ${exit.code ?? exit.signal}\n${body}`, details);
  return result(null, body || "(no output)", details);
}
