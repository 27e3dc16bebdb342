// `pihost plans pending|show|approve|reject`: plan proposals and their approval.
import { createHash } from "node:crypto";
import { type Command, Option } from "commander";
import { AppError } from "../../protocol/app-error.ts";
import type { CliBus } from "../cli-bus.ts";
import { APPROVE_MODES, approveMode, resolveParams, timeoutMs } from "../cli-params.ts";
import type { ProposalView } from "../../protocol/schemas.ts";
import { bus, DEFAULT_TIMEOUT_SECONDS, isJson, out, outJson, type Run } from "../cli-run.ts";
import { EXIT } from "../exit-codes.ts";
import { follow, interactive } from "../follow.ts";
import { colourEnabled, painter, printable } from "../terminal-text.ts";
import { askMode } from "../tty-prompts.ts";
import { doneFromProposal, type FollowTarget } from "../turn-follower.ts";
import { type ListCli, listOptions, runList } from "../list-command.ts";
import { formatProposalList, formatResolved } from "../view-format.ts";
import { addPlanHistoryCommands } from "./plan-history.ts";

export function addPlanCommands(program: Command, run: Run): void {
  const plans = program.command("plans").description("plan proposals awaiting approval");
  listOptions(
    plans
      .command("pending")
      .description("list pending plan proposals, oldest first")
      .option("--session <id>", "only this session's")
      .option("-q, --quiet", "print only proposal ids, one per line"),
    "plans.pending",
  ).action(async (opts: ListCli & { session?: string; quiet?: boolean }, cmd: Command) => {
    const filters = opts.session ? { sessionId: opts.session } : {};
    await runList(run, cmd, "plans.pending", filters, opts, {
      format: (rows) => (opts.quiet ? rows.map((p) => p.proposalId) : formatProposalList(rows)),
      ...(opts.quiet ? {} : { empty: "no pending plans" }),
      command: `pihost plans pending${opts.session ? ` --session ${opts.session}` : ""}${opts.quiet ? " -q" : ""}`,
    });
  });
  plans
    .command("show")
    .description(
      "print the plan file exactly as it is; exit 1 with a warning if it is not what was submitted",
    )
    .argument("<proposalId>")
    .action((proposalId: string, _opts: unknown, cmd: Command) => showPlan(run, proposalId, cmd));
  plans
    .command("approve")
    .description(
      "approve a plan; the session switches to Agent and runs it under the given permission mode (asked on a terminal, Ask preselected)",
    )
    .argument("<proposalId>")
    .addOption(
      new Option(
        "--mode <mode>",
        "permission mode for the execution (required unless asked on a terminal; never assumed)",
      ).choices(APPROVE_MODES),
    )
    .option("--wait", "follow the execution turn until it ends")
    .option("--timeout <seconds>", "how long to follow with --wait", DEFAULT_TIMEOUT_SECONDS)
    .action((proposalId: string, opts: ApproveCli, cmd: Command) => approvePlan(run, proposalId, opts, cmd));
  plans
    .command("reject")
    .description("reject a plan; the session stays in Plan")
    .argument("<proposalId>")
    .action(async (proposalId: string, _opts: unknown, cmd: Command) => {
      const proposal = await (await bus(run)).call("plans.get", { proposalId });
      await resolve(run, cmd, proposal, "reject", undefined, null);
    });
  addPlanHistoryCommands(plans, run);
}

/** `plans show`: the plan file's exact bytes, and whether they are still what was submitted. */
async function showPlan(run: Run, proposalId: string, cmd: Command): Promise<void> {
  const file = await readPlanFile(await bus(run), proposalId);
  const sha256 = createHash("sha256").update(file.bytes).digest("hex");
  const matchesRecord = sha256 === file.recordedSha256;
  const content = file.bytes.toString("utf8");
  if (isJson(cmd))
    outJson(run, {
      proposalId,
      path: file.path,
      byteSize: file.bytes.byteLength,
      sha256,
      recordedSha256: file.recordedSha256,
      matchesRecord,
      content,
    });
  else {
    // The exact bytes (nothing added, not even a newline); on a terminal, control characters shown.
    run.deps.stdout(run.deps.stdoutIsTTY ? printable(content) : content);
    if (matchesRecord) reportHash(run, false, file, "stderr");
  }
  if (!matchesRecord) {
    if (!isJson(cmd)) reportHash(run, false, file, "stderr");
    run.exitCode = EXIT.REFUSED;
  }
}

interface ApproveCli {
  mode?: string;
  wait?: boolean;
  timeout: string;
}

/** `plans approve`: shows a pending plan and asks its mode on a terminal, then approves it. */
async function approvePlan(run: Run, proposalId: string, opts: ApproveCli, cmd: Command): Promise<void> {
  const json = isJson(cmd);
  const ms = timeoutMs(opts.timeout);
  const ask = opts.mode === undefined;
  // Refused before anything is sent: with no terminal to ask on, no mode is ever assumed.
  if (ask && !interactive(run, json)) approveMode(undefined);
  const b = await bus(run);
  const proposal = await b.call("plans.get", { proposalId });
  if (proposal.status === "pending") {
    const file = await readPlanFile(b, proposalId);
    if (ask) {
      out(run, [
        `plan ${proposal.proposalId}: ${proposal.title}`,
        ...(proposal.question ? [`  question: ${proposal.question}`] : []),
        "",
      ]);
      run.deps.stdout(printable(file.bytes.toString("utf8")));
      if (!file.bytes.toString("utf8").endsWith("\n")) run.deps.stdout("\n");
    }
    reportHash(run, json, file);
  }
  let mode = opts.mode;
  if (ask) {
    const r = await askMode({ stdin: run.deps.stdin!, write: run.deps.stdout }, APPROVE_MODES, describeMode);
    if ("stopped" in r) {
      out(run, ["nothing approved: the plan is still pending"]);
      run.exitCode = r.stopped === "interrupt" ? EXIT.STOPPED : EXIT.REFUSED;
      return;
    }
    mode = r.mode;
  }
  await resolve(run, cmd, proposal, "approve", approveMode(mode), opts.wait ? ms : null);
}

/**
 * Every page of a plan file, reassembled. The CLI hashes the bytes itself: a file changed between
 * pages is a mix no single page's sha256 describes, and differs from the recorded hash.
 */
async function readPlanFile(
  b: CliBus,
  proposalId: string,
): Promise<{ path: string; recordedSha256: string; bytes: Buffer }> {
  const chunks: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const page = await b.call("artifacts.read", { proposalId, offset });
    chunks.push(Buffer.from(page.data, "base64"));
    if (page.nextOffset === null) {
      return { path: page.path, recordedSha256: page.recordedSha256, bytes: Buffer.concat(chunks) };
    }
    // Each page must move on, or a faulty host would keep the CLI asking forever.
    if (page.nextOffset <= offset)
      throw new AppError("INTERNAL", `artifacts.read did not advance past ${offset}`);
    offset = page.nextOffset;
  }
}

/** What each mode lets the execution do, as the mode question shows it. */
function describeMode(mode: string): string {
  switch (mode) {
    case "ask":
      return "every edit and every Bash call waits for a person";
    case "accept-edits":
      return "edits run; every Bash call waits for a person";
    case "auto":
      return "edits and Bash run without asking: WARNING, Bash may change any file in the workspace";
    default:
      return "";
  }
}

/** The file's hash beside the recorded one; a mismatch is said loudly (the host refuses anyway). */
function reportHash(
  run: Run,
  json: boolean,
  file: { path: string; recordedSha256: string; bytes: Buffer },
  to: "stdout" | "stderr" = "stdout",
): void {
  const sha256 = createHash("sha256").update(file.bytes).digest("hex");
  if (sha256 === file.recordedSha256) {
    const line = `plan file: ${file.path} (${file.bytes.byteLength} bytes), sha256 ${sha256} matches the record\n`;
    if (!json) run.deps[to](line);
    return;
  }
  const message = `the plan file ${file.path} no longer matches what was submitted: sha256 ${sha256}, recorded ${file.recordedSha256}; the host refuses to approve it`;
  if (json) run.deps.stderr(`${JSON.stringify({ notice: "PLAN_ARTIFACT_HASH_MISMATCH", message })}\n`);
  else {
    const paint = painter(colourEnabled(run.deps.stderrIsTTY, run.deps.env));
    run.deps.stderr(`${paint("alert", `warning PLAN_ARTIFACT_HASH_MISMATCH: ${message}`)}\n`);
  }
}

async function resolve(
  run: Run,
  cmd: Command,
  proposal: ProposalView,
  action: "approve" | "reject",
  mode: string | undefined,
  waitMs: number | null,
): Promise<void> {
  const json = isJson(cmd);
  const b = await bus(run);
  const params = resolveParams(proposal, action, mode);
  // Subscribe before resolving, so the execution turn's first events cannot be missed.
  const sub = waitMs === null ? null : await b.subscribe(proposal.sessionId);
  try {
    const r = await b.call("plans.resolve", params);
    if (json) outJson(run, r);
    else out(run, formatResolved(r));
    if (sub === null || waitMs === null) return;
    const already = doneFromProposal(r);
    if (already) {
      run.exitCode = already.exitCode;
      return;
    }
    const target: FollowTarget = { kind: "execution", proposalId: r.proposalId, turnId: null };
    run.exitCode = await follow(run, sub, { target, ms: waitMs, json });
  } finally {
    sub?.close();
  }
}
