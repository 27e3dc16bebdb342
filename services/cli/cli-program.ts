// The `pihost` command tree (commander) and its one error-to-exit-code mapping; each command group is
// one file under commands/. Every effect comes in through CliDeps, so tests run the real parser
// without NATS. Exit codes: 0 ok, 1 error or a turn that ended aborted/error, 2 usage.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Command, CommanderError } from "commander";
import { AppError } from "../protocol/app-error.ts";
import { acceptRequestId, requestIdOfError } from "../protocol/rpc-client.ts";
import { PROTOCOL_VERSION } from "../protocol/subjects.ts";
import { CliError, UsageError } from "./cli-error.ts";
import type { CliConfig } from "./cli-config.ts";
import { bus, type CliDeps, isJson, out, outJson, type Run } from "./cli-run.ts";
import { EXIT, EXIT_CODES_HELP } from "./exit-codes.ts";
import { addCompletionCommand } from "./commands/completion.ts";
import { addNatsConfigCommand } from "./commands/nats-config.ts";
import { addAdminCommands } from "./commands/admin.ts";
import { addHostCommands } from "./commands/host.ts";
import { addWorkerCommands } from "./commands/workers.ts";
import { addPermissionCommands } from "./commands/permissions.ts";
import { addPlanCommands } from "./commands/plans.ts";
import { addProjectCommands } from "./commands/project.ts";
import { addPromptCommands } from "./commands/prompt.ts";
import { addSessionCommands } from "./commands/session.ts";
import { addWatchCommand } from "./commands/watch.ts";
import { formatHello } from "./view-format.ts";

export type { CliDeps } from "./cli-run.ts";

/** The package's version (the CLI and the host ship together). */
const VERSION: string = JSON.parse(
  readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8"),
).version;

function buildProgram(run: Run): Command {
  const program = new Command("pihost")
    .description("pi-host command line: projects, sessions, prompts and plan approvals over NATS")
    .version(`pihost ${VERSION} (protocol ${PROTOCOL_VERSION})`, "-V, --version")
    .option("--json", "print raw result JSON (and one JSON event per line when following a turn)")
    .option(
      "--request-id <id>",
      "send this id with every request (1-64 of [A-Za-z0-9_-]); the host's logs and replies carry it",
    )
    .exitOverride()
    .configureOutput({
      writeOut: (s) => run.deps.stdout(s),
      writeErr: (s) => run.deps.stderr(s),
      // With --json a usage error is the one JSON object on stderr too.
      outputError: (s, write) => {
        const message = s.replace(/^error: /, "").trimEnd();
        write(
          run.json
            ? `${JSON.stringify({ error: { code: "USAGE", message, retriable: false } })}\n`
            : `error USAGE: ${message}\n`,
        );
      },
    })
    .addHelpText(
      "after",
      `\nEnvironment: NATS_URL, PI_PREFIX, PI_PRINCIPAL, NATS_USER, NATS_PASSWORD, NO_COLOR.\n${EXIT_CODES_HELP}`,
    );
  program
    .command("hello")
    .description("check the protocol version with the host")
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("host.hello", { protocolVersion: PROTOCOL_VERSION });
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatHello(r));
    });
  addHostCommands(program, run);
  addWorkerCommands(program, run);
  addProjectCommands(program, run);
  addSessionCommands(program, run);
  addPromptCommands(program, run);
  addWatchCommand(program, run);
  addPermissionCommands(program, run);
  addPlanCommands(program, run);
  addAdminCommands(program, run);
  addNatsConfigCommand(program, run);
  addCompletionCommand(program, run);
  return program;
}

/** The exit code class of a failure (exit-codes.ts). */
function exitFor(err: unknown): number {
  if (err instanceof UsageError) return EXIT.USAGE;
  if (err instanceof CliError) return EXIT.RETRIABLE;
  if (err instanceof AppError) return err.retriable ? EXIT.RETRIABLE : EXIT.REFUSED;
  return EXIT.REFUSED;
}

/**
 * Writes `error CODE: message` for any failure (with --json: one JSON object
 * `{"error": {code, message, retriable, details?}}` on stderr) and returns the exit code; only here.
 */
function reportError(run: Run, err: unknown, json: boolean, requestId: string | undefined): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message (through outputError); help/version exit 0.
    return err.exitCode === 0 ? EXIT.OK : EXIT.USAGE;
  }
  if (json) {
    const e =
      err instanceof AppError
        ? err.toWire()
        : err instanceof UsageError || err instanceof CliError
          ? { code: err.code, message: err.message, retriable: err instanceof CliError }
          : { code: "INTERNAL", message: err instanceof Error ? err.message : String(err), retriable: true };
    run.deps.stderr(`${JSON.stringify({ error: e })}\n`);
    return exitFor(err);
  }
  if (err instanceof AppError) {
    // The id the host replied with (or, no reply, the one sent), to find the request's log lines.
    const id = requestIdOfError(err) ?? requestId;
    run.deps.stderr(`error ${err.code}: ${err.message}${id !== undefined ? ` (request ${id})` : ""}\n`);
    return exitFor(err);
  }
  if (err instanceof UsageError || err instanceof CliError) {
    run.deps.stderr(`error ${err.code}: ${err.message}\n`);
    return exitFor(err);
  }
  run.deps.stderr(`error INTERNAL: ${err instanceof Error ? err.message : String(err)}\n`);
  return EXIT.REFUSED;
}

/** Runs one command line (user arguments only, without node and script) and returns its exit code. */
export async function runCli(args: string[], deps: CliDeps): Promise<number> {
  // --request-id, read once commander has parsed the global options (before any command's action).
  let requestId: string | undefined;
  const connect = (config: CliConfig) => {
    const withId: CliConfig & { requestId?: string } = {
      ...config,
      ...(requestId !== undefined ? { requestId } : {}),
    };
    return deps.connect(withId);
  };
  const run: Run = { deps: { ...deps, connect }, exitCode: 0, bus: null, json: args.includes("--json") };
  try {
    const program = buildProgram(run);
    program.hook("preAction", () => {
      const given = program.opts<{ requestId?: string }>().requestId;
      if (given === undefined) return;
      if (acceptRequestId(given) === null)
        throw new UsageError(`--request-id must be 1 to 64 of [A-Za-z0-9_-], got ${JSON.stringify(given)}`);
      requestId = given;
    });
    await program.parseAsync(args, { from: "user" });
    return run.exitCode;
  } catch (err) {
    return reportError(run, err, run.json, requestId);
  } finally {
    await run.bus?.close().catch(() => {});
  }
}
