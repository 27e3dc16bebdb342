// `pihost plans pending|show|approve|reject`: plan proposals and their approval.
import { createHash } from "node:crypto";
import { type Command, Option } from "commander";
import { AppError } from "../../protocol/app-error.ts";
import type { CliBus } from "../cli-bus.ts";
import { APPROVE_MODES, approveMode, resolveParams, timeoutMs } from "../cli-params.ts";
import { bus, DEFAULT_TIMEOUT_SECONDS, follow, isJson, out, outJson, type Run } from "../cli-run.ts";
import { doneFromProposal, type FollowTarget, startFollow } from "../turn-follower.ts";
import { formatProposalList, formatResolved } from "../view-format.ts";

export function addPlanCommands(program: Command, run: Run): void {
  const plans = program.command("plans").description("plan proposals awaiting approval");
  plans
    .command("pending")
    .description("list pending plan proposals")
    .option("--session <id>", "only this session's")
    .option("-q, --quiet", "print only proposal ids, one per line")
    .action(async (opts: { session?: string; quiet?: boolean }, cmd: Command) => {
      const params = opts.session ? { sessionId: opts.session } : {};
      const r = await (await bus(run)).call("plans.pending", params);
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
    .description(
      "print the plan file exactly as it is; exit 1 with a warning if it is not what was submitted",
    )
    .argument("<proposalId>")
    .action(async (proposalId: string, _opts: unknown, cmd: Command) => {
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
      else run.deps.stdout(content); // the exact bytes: nothing added, not even a newline
      if (!matchesRecord) {
        run.deps.stderr(
          `warning PLAN_ARTIFACT_HASH_MISMATCH: the plan file no longer matches what was submitted (sha256 ${sha256}, recorded ${file.recordedSha256})\n`,
        );
        run.exitCode = 1;
      }
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
  const proposal = await b.call("plans.get", { proposalId });
  const params = resolveParams(proposal, action, mode);
  // Subscribe before resolving, so the execution turn's first events cannot be missed.
  const sub = waitMs === null ? null : await b.subscribeSession(proposal.sessionId);
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
    run.exitCode = await follow(run, sub, startFollow(target), waitMs, json);
  } finally {
    sub?.close();
  }
}
