// The `pihost` command tree (commander) and its one error-to-exit-code mapping. Every effect comes
// in through CliDeps, so tests run the real parser without NATS. Exit codes: 0 ok, 1 error or a turn
// that ended aborted/error, 2 usage (refused before anything is sent).
import type { PermissionRequestView } from "../protocol/permission-schemas.ts";
import { Command, CommanderError, Option } from "commander";
import { AppError } from "../protocol/app-error.ts";
import type { SessionEvent } from "../protocol/events.ts";
import type { ProjectView, ProposalView, SessionView } from "../protocol/schemas.ts";
import { PROTOCOL_VERSION } from "../protocol/subjects.ts";
import type { CliBus, EventSubscription } from "./cli-bus.ts";
import { type CliConfig, readCliConfig } from "./cli-config.ts";
import { CliError, UsageError } from "./cli-error.ts";
import {
  APPROVE_MODES,
  approveMode,
  OPERATING_MODES,
  operatingMode,
  PERMISSION_MODES,
  permissionMode,
  projectConfigureParams,
  projectCreateParams,
  resolveParams,
  sessionCreateParams,
  timeoutMs,
} from "./cli-params.ts";
import { approvalHintLines, formatEvent } from "./event-format.ts";
import {
  doneFromProposal,
  type FollowState,
  type FollowTarget,
  followEvent,
  startFollow,
} from "./turn-follower.ts";
import {
  formatAbort,
  formatHello,
  formatProject,
  formatProjectCreated,
  formatProposalList,
  formatResolved,
  formatSession,
  formatSessionCreated,
  formatSessionList,
} from "./view-format.ts";

export interface CliDeps {
  env: NodeJS.ProcessEnv;
  cwd: string;
  osUserName: string | undefined;
  stdout(text: string): void;
  stderr(text: string): void;
  connect(config: CliConfig): Promise<CliBus>;
  readFile(file: string): Promise<string>;
}

const DEFAULT_TIMEOUT_SECONDS = "300";
/** Every surface that offers Plan says this (DESIGN §1). */
const PLAN_NOTE =
  "plan is planning intent, not a sandbox: Bash still runs under the permission mode and can change files under auto";

interface Run {
  deps: CliDeps;
  exitCode: number;
  bus: CliBus | null;
}

function out(run: Run, lines: string[]): void {
  for (const line of lines) run.deps.stdout(`${line}\n`);
}

function outJson(run: Run, value: unknown): void {
  run.deps.stdout(`${JSON.stringify(value)}\n`);
}

async function bus(run: Run): Promise<CliBus> {
  if (run.bus === null) run.bus = await run.deps.connect(readCliConfig(run.deps.env, run.deps.osUserName));
  return run.bus;
}

function isJson(cmd: Command): boolean {
  return cmd.optsWithGlobals<{ json?: boolean }>().json === true;
}

/** Prints what follows `state` until it is done; a deadline passing is a local TIMEOUT (exit 1). */
async function follow(run: Run, sub: EventSubscription, state0: FollowState, ms: number, json: boolean) {
  const deadline = Date.now() + ms;
  let state = state0;
  for (;;) {
    const e: SessionEvent | null = await sub.next(deadline);
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

function addProjectCommands(program: Command, run: Run): void {
  const project = program.command("project").description("workspace projects");
  project
    .command("create")
    .description("create a project on a workspace folder (made absolute)")
    .requiredOption("--name <name>", "project name")
    .requiredOption("--root <dir>", "workspace folder, under one of the host's workspace roots")
    .option("-q, --quiet", "print only the new project id")
    .action(async (opts: { name: string; root: string; quiet?: boolean }, cmd: Command) => {
      const params = projectCreateParams(opts, run.deps.cwd);
      const p = await (await bus(run)).call<ProjectView>("projects.create", params);
      if (isJson(cmd)) outJson(run, p);
      else if (opts.quiet) out(run, [p.id]);
      else out(run, formatProjectCreated(p));
    });
  project
    .command("show")
    .description("show a project and its tool settings")
    .argument("<projectId>")
    .action(async (projectId: string, _opts: unknown, cmd: Command) => {
      const p = await (await bus(run)).call<ProjectView>("projects.get", { projectId });
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
        const p = await (await bus(run)).call<ProjectView>("projects.configure", params);
        if (isJson(cmd)) outJson(run, p);
        else out(run, formatProject(p));
      },
    );
}

function addSessionCommands(program: Command, run: Run): void {
  const session = program.command("session").description("agent sessions");
  session
    .command("create")
    .description("create a session in a project")
    .requiredOption("--project <id>", "project id")
    .option("--title <title>", "session title")
    .addOption(new Option("--mode <mode>", `operating mode; ${PLAN_NOTE}`).choices(OPERATING_MODES))
    .addOption(new Option("--permission-mode <mode>", "permission mode").choices(PERMISSION_MODES))
    .option("--model <provider/model>", "model, e.g. anthropic/claude-sonnet-4-5")
    .option("--demo", "use the scripted demo model (scripted/demo)")
    .option("--script <file.json>", "use a scripted model replaying the JSON array of steps in the file")
    .option(
      "--approver <principal>",
      "another principal allowed to approve (repeatable)",
      collect,
      [] as string[],
    )
    .option("-q, --quiet", "print only the new session id")
    .action(async (opts: SessionCreateCli, cmd: Command) => {
      let script: { file: string; steps: unknown } | undefined;
      if (opts.script !== undefined) script = { file: opts.script, steps: await readJson(run, opts.script) };
      const params = sessionCreateParams({ ...opts, script });
      const s = await (await bus(run)).call<SessionView>("session.create", params);
      if (isJson(cmd)) outJson(run, s);
      else if (opts.quiet) out(run, [s.id]);
      else out(run, formatSessionCreated(s));
    });
  session
    .command("list")
    .description("list your sessions")
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call<{ sessions: SessionView[] }>("session.list", {});
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatSessionList(r.sessions));
    });
  session
    .command("show")
    .description("show one session")
    .argument("<sessionId>")
    .action(async (sessionId: string, _opts: unknown, cmd: Command) => {
      const s = await (await bus(run)).call<SessionView>("session.get", { sessionId });
      if (isJson(cmd)) outJson(run, s);
      else out(run, formatSession(s));
    });
  session
    .command("mode")
    .description(`switch the operating mode (only while the session is idle); ${PLAN_NOTE}`)
    .argument("<sessionId>")
    .argument("<mode>", OPERATING_MODES.join("|"))
    .action(async (sessionId: string, mode: string, _opts: unknown, cmd: Command) => {
      const params = { sessionId, mode: operatingMode(mode, "mode") };
      const s = await (await bus(run)).call<SessionView>("session.configure", params);
      if (isJson(cmd)) outJson(run, s);
      else out(run, formatSession(s));
    });
  session
    .command("permissions")
    .description("set the permission mode (only while the session is idle)")
    .argument("<sessionId>")
    .argument("<mode>", PERMISSION_MODES.join("|"))
    .action(async (sessionId: string, mode: string, _opts: unknown, cmd: Command) => {
      const params = { sessionId, permissionMode: permissionMode(mode, "permission mode") };
      const s = await (await bus(run)).call<SessionView>("session.configure", params);
      if (isJson(cmd)) outJson(run, s);
      else out(run, formatSession(s));
    });
}

interface SessionCreateCli {
  project: string;
  title?: string;
  mode?: string;
  permissionMode?: string;
  model?: string;
  demo?: boolean;
  script?: string;
  approver?: string[];
  quiet?: boolean;
}

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

async function readJson(run: Run, file: string): Promise<unknown> {
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

function addPromptCommands(program: Command, run: Run): void {
  program
    .command("prompt")
    .description("send a prompt and follow the turn until it ends or a plan awaits approval")
    .argument("<sessionId>")
    .argument("<text>")
    .option("--no-wait", "print the turn id and return at once")
    .option("--timeout <seconds>", "how long to follow the turn", DEFAULT_TIMEOUT_SECONDS)
    .option("--idempotency-key <key>", "a retried prompt with the same key returns the first reply")
    .action(async (sessionId: string, text: string, opts: PromptCli, cmd: Command) => {
      const ms = timeoutMs(opts.timeout);
      const json = isJson(cmd);
      const b = await bus(run);
      const params = {
        sessionId,
        text,
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      };
      if (!opts.wait) {
        const r = await b.call<{ turnId: string }>("session.prompt", params);
        if (json) outJson(run, r);
        else out(run, [`turn ${r.turnId}`]);
        return;
      }
      // Subscribe first: the turn's first events may be published before the reply arrives.
      const sub = await b.subscribeSession(sessionId);
      try {
        const r = await b.call<{ turnId: string }>("session.prompt", params);
        if (json) outJson(run, r);
        run.exitCode = await follow(run, sub, startFollow({ kind: "turn", turnId: r.turnId }), ms, json);
      } finally {
        sub.close();
      }
    });
  program
    .command("abort")
    .description("abort the session's running turn, pending approval or execution")
    .argument("<sessionId>")
    .action(async (sessionId: string, _opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call<{ sessionId: string; aborted: { turnId: string } | null }>(
        "session.abort",
        { sessionId },
      );
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatAbort(r));
    });
}

interface PromptCli {
  wait: boolean;
  timeout: string;
  idempotencyKey?: string;
}

function addPlanCommands(program: Command, run: Run): void {
  const permissions = program
    .command("permissions")
    .description("tool calls waiting for a person's permission");
  permissions
    .command("pending")
    .description("list permission prompts waiting for an answer")
    .option("--session <id>", "only this session's")
    .action(async (opts: { session?: string }, cmd: Command) => {
      const params = opts.session ? { sessionId: opts.session } : {};
      const r = await (await bus(run)).call<{ requests: PermissionRequestView[] }>(
        "permissions.pending",
        params,
      );
      if (isJson(cmd)) outJson(run, r);
      else
        out(
          run,
          r.requests.length
            ? r.requests.map(
                (q) =>
                  `${q.requestId}  ${q.tool} (${q.risk})  ${JSON.stringify(q.preview)}  until ${q.deadline}`,
              )
            : ["no permission prompts are waiting"],
        );
    });
  for (const [name, decision, what] of [
    ["allow", "allow-once", "allow this one call"],
    [
      "allow-session",
      "allow-session",
      "allow this tool for the rest of the session (never lifts a Plan denial)",
    ],
    ["deny", "deny", "deny the call"],
  ] as const) {
    permissions
      .command(name)
      .description(what)
      .argument("<requestId>")
      .action(async (requestId: string, _opts: unknown, cmd: Command) => {
        const r = await (await bus(run)).call<PermissionRequestView>("permissions.resolve", {
          requestId,
          decision,
        });
        if (isJson(cmd)) outJson(run, r);
        else out(run, [`${r.requestId}: ${r.decision ?? r.status}`]);
      });
  }

  const plans = program.command("plans").description("plan proposals awaiting approval");
  plans
    .command("pending")
    .description("list pending plan proposals")
    .option("--session <id>", "only this session's")
    .option("-q, --quiet", "print only proposal ids, one per line")
    .action(async (opts: { session?: string; quiet?: boolean }, cmd: Command) => {
      const params = opts.session ? { sessionId: opts.session } : {};
      const r = await (await bus(run)).call<{ proposals: ProposalView[] }>("plans.pending", params);
      if (isJson(cmd)) outJson(run, r);
      else if (opts.quiet)
        out(
          run,
          r.proposals.map((p) => p.proposalId),
        );
      else out(run, formatProposalList(r.proposals));
    });
  plans
    .command("show")
    .description("print the plan file exactly as submitted")
    .argument("<proposalId>")
    .action(async (proposalId: string, _opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call<{ content: string }>("artifacts.read", { proposalId });
      if (isJson(cmd)) outJson(run, r);
      else run.deps.stdout(r.content); // the exact bytes: nothing added, not even a newline
    });
  plans
    .command("approve")
    .description("approve a plan; the session switches to Agent and runs it under the given permission mode")
    .argument("<proposalId>")
    .addOption(
      new Option("--mode <mode>", "permission mode for the execution (required, never assumed)")
        .choices(APPROVE_MODES)
        .makeOptionMandatory(),
    )
    .option("--wait", "follow the execution turn until it ends")
    .option("--timeout <seconds>", "how long to follow with --wait", DEFAULT_TIMEOUT_SECONDS)
    .action(
      async (proposalId: string, opts: { mode?: string; wait?: boolean; timeout: string }, cmd: Command) => {
        const mode = approveMode(opts.mode);
        const ms = timeoutMs(opts.timeout);
        await resolve(run, cmd, proposalId, "approve", mode, opts.wait ? ms : null);
      },
    );
  plans
    .command("reject")
    .description("reject a plan; the session stays in Plan")
    .argument("<proposalId>")
    .action(async (proposalId: string, _opts: unknown, cmd: Command) => {
      await resolve(run, cmd, proposalId, "reject", undefined, null);
    });
}

async function resolve(
  run: Run,
  cmd: Command,
  proposalId: string,
  action: "approve" | "reject",
  mode: string | undefined,
  waitMs: number | null,
): Promise<void> {
  const json = isJson(cmd);
  const b = await bus(run);
  const proposal = await b.call<ProposalView>("plans.get", { proposalId });
  const params = resolveParams(proposal, action, mode);
  // Subscribe before resolving, so the execution turn's first events cannot be missed.
  const sub = waitMs === null ? null : await b.subscribeSession(proposal.sessionId);
  try {
    const r = await b.call<ProposalView>("plans.resolve", params);
    if (json) outJson(run, r);
    else out(run, formatResolved(r));
    if (sub === null || waitMs === null) return;
    const already = doneFromProposal(r);
    if (already) {
      run.exitCode = already.exitCode;
      return;
    }
    const target: FollowTarget = { kind: "execution", proposalId: r.proposalId, turnId: null };
    run.exitCode = await follow(run, sub, startFollow(target), waitMs, json);
  } finally {
    sub?.close();
  }
}

function buildProgram(run: Run): Command {
  const program = new Command("pihost")
    .description("pi-host command line: projects, sessions, prompts and plan approvals over NATS")
    .option("--json", "print raw result JSON (and one JSON event per line when following a turn)")
    .exitOverride()
    .configureOutput({
      writeOut: (s) => run.deps.stdout(s),
      writeErr: (s) => run.deps.stderr(s),
      outputError: (s, write) => write(`error USAGE: ${s.replace(/^error: /, "")}`),
    })
    .addHelpText(
      "after",
      "\nEnvironment: NATS_URL, PI_PREFIX, PI_PRINCIPAL, NATS_USER, NATS_PASSWORD.\nExit codes: 0 ok, 1 error, 2 usage.",
    );
  program
    .command("hello")
    .description("check the protocol version with the host")
    .action(async (_opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call<{ protocolVersion: number; hostId: string; devMode: boolean }>(
        "host.hello",
        { protocolVersion: PROTOCOL_VERSION },
      );
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatHello(r));
    });
  addProjectCommands(program, run);
  addSessionCommands(program, run);
  addPromptCommands(program, run);
  addPlanCommands(program, run);
  return program;
}

/** Writes `error CODE: message` for any failure and returns the exit code; only here. */
function reportError(run: Run, err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message (through outputError); help/version exit 0.
    return err.exitCode === 0 ? 0 : 2;
  }
  if (err instanceof UsageError) {
    run.deps.stderr(`error USAGE: ${err.message}\n`);
    return 2;
  }
  if (err instanceof AppError || err instanceof CliError) {
    run.deps.stderr(`error ${err.code}: ${err.message}\n`);
    return 1;
  }
  run.deps.stderr(`error INTERNAL: ${err instanceof Error ? err.message : String(err)}\n`);
  return 1;
}

/** Runs one command line (user arguments only, without node and script) and returns its exit code. */
export async function runCli(args: string[], deps: CliDeps): Promise<number> {
  const run: Run = { deps, exitCode: 0, bus: null };
  try {
    await buildProgram(run).parseAsync(args, { from: "user" });
    return run.exitCode;
  } catch (err) {
    return reportError(run, err);
  } finally {
    await run.bus?.close().catch(() => {});
  }
}
