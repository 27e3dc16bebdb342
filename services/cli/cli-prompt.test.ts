// The CLI's prompt and plans approve commands on a bus double (test-bus.ts): what is sent, in which
// order, and what a person sees while the agent works and when a plan waits for them.
import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { cli } from "./test-cli.ts";
import { ev, proposalView } from "./test-events.ts";

import { fakeBus } from "./test-bus.ts";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

describe("prompt", () => {
  const proposal = proposalView();

  it("subscribes before prompting and stops when the plan awaits approval", async () => {
    const { bus, log } = fakeBus(
      { "session.prompt": () => ({ turnId: "t1" }) },
      {
        "session.prompt": [
          ev("turn.started", { turnId: "t1", kind: "prompt" }),
          ev("tool.called", { turnId: "t1", toolCallId: "c1", tool: "ExitPlanMode", args: { title: "x" } }),
          ev("tool.result", {
            turnId: "t1",
            toolCallId: "c1",
            tool: "ExitPlanMode",
            decision: "allow",
            isError: false,
            text: "submitted",
          }),
          ev("plan.changed", { state: "awaiting_approval", action: "submitted", proposal }),
        ],
      },
    );
    const r = await cli(["prompt", "s1", "Add a greeting file"], bus);
    expect(r.code).toBe(0);
    expect(log.slice(0, 2)).toEqual([
      "subscribe s1",
      'call session.prompt {"sessionId":"s1","text":"Add a greeting file"}',
    ]);
    expect(log).toContain("unsubscribe");
    expect(r.stdout).toContain("turn started: t1 (prompt)");
    expect(r.stdout).toContain("tool call: ExitPlanMode");
    expect(r.stdout).toContain('plan submitted: p1 "Add a greeting"');
    expect(r.stdout).toContain("plan awaiting approval: p1");
    expect(r.stdout).toContain("pihost plans approve p1 --mode MODE");
    expect(r.stdout).toContain("pihost plans reject p1");
  });

  it("says plainly when no worker has claimed the turn, once, and says nothing when one has", async () => {
    const { bus } = fakeBus({ "session.prompt": () => ({ turnId: "t1" }) });
    const r = await cli(["prompt", "s1", "hi", "--timeout", "1"], bus, {}, { claimNoticeMs: 50 });
    expect(r.code).toBe(3);
    expect(r.stdout.match(/waiting: no worker has claimed t1 yet/g)).toHaveLength(1);
    expect(r.stderr).toMatch(/error TIMEOUT/);
    const claimed = fakeBus(
      { "session.prompt": () => ({ turnId: "t1" }) },
      { "session.prompt": [ev("turn.claimed", { turnId: "t1", workerId: "w1" })] },
    );
    const r2 = await cli(["prompt", "s1", "hi", "--timeout", "1"], claimed.bus, {}, { claimNoticeMs: 50 });
    expect(r2.stdout).toContain("turn claimed: t1 by worker w1");
    expect(r2.stdout).not.toContain("no worker has claimed");
  });

  it("a long wait says what it waits for: the unanswered prompt with its command, then the quiet turn", async () => {
    const requested = ev("permission.requested", {
      requestId: "req1",
      turnId: "t1",
      toolCallId: "c1",
      tool: "Bash",
      risk: "high",
      preview: { command: "ls" },
      deadline: "2030-01-01T00:00:00.000Z",
    });
    const { bus } = fakeBus(
      { "session.prompt": () => ({ turnId: "t1" }) },
      { "session.prompt": [ev("turn.claimed", { turnId: "t1", workerId: "w1" }), requested] },
    );
    const r = await cli(["prompt", "s1", "hi", "--timeout", "0.5"], bus, {}, { waitNoticeMs: 100 });
    expect(r.code).toBe(3);
    expect(r.stdout).toMatch(
      /^waiting: permission for Bash \(req1\) is unanswered until 2030-01-01T00:00:00.000Z; answer: pihost permissions allow req1/m,
    );
    const quiet = fakeBus(
      { "session.prompt": () => ({ turnId: "t1" }) },
      { "session.prompt": [ev("turn.claimed", { turnId: "t1", workerId: "w1" })] },
    );
    const q = await cli(
      ["--json", "prompt", "s1", "hi", "--timeout", "0.5"],
      quiet.bus,
      {},
      { waitNoticeMs: 100 },
    );
    const notices = q.stderr
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(notices[0]).toMatchObject({
      notice: "WAITING",
      message: expect.stringMatching(/^waiting: turn t1 is running; nothing new for \d+ s/),
    });
  });

  it("exits 4 (interrupted) when the turn ends aborted", async () => {
    const { bus } = fakeBus(
      { "session.prompt": () => ({ turnId: "t1" }) },
      { "session.prompt": [ev("turn.ended", { turnId: "t1", status: "aborted", code: "TURN_ABORTED" })] },
    );
    const r = await cli(["prompt", "s1", "hi"], bus);
    expect(r.code).toBe(4); // interrupted
    expect(r.stdout).toContain("turn ended: t1 aborted (TURN_ABORTED)");
  });

  it("--json prints the reply and each event as one JSON line", async () => {
    const ended = ev("turn.ended", { turnId: "t1", status: "completed" });
    const { bus } = fakeBus({ "session.prompt": () => ({ turnId: "t1" }) }, { "session.prompt": [ended] });
    const r = await cli(["prompt", "s1", "hi", "--json"], bus);
    expect(r.code).toBe(0);
    expect(
      r.stdout
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([{ turnId: "t1" }, ended]);
  });

  it("--no-wait prints the turn id without subscribing", async () => {
    const { bus, log } = fakeBus({ "session.prompt": () => ({ turnId: "t1" }) });
    const r = await cli(["prompt", "s1", "hi", "--no-wait"], bus);
    expect(r).toMatchObject({ code: 0, stdout: "turn t1\n" });
    expect(log.some((l) => l.startsWith("subscribe"))).toBe(false);
  });

  it("times out with a local TIMEOUT error, exit 3 (retriable)", async () => {
    const { bus } = fakeBus({ "session.prompt": () => ({ turnId: "t1" }) });
    const r = await cli(["prompt", "s1", "hi", "--timeout", "0.05"], bus);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/^error TIMEOUT: turn t1 did not finish within/);
  });
});

describe("plans approve", () => {
  const planBytes = Buffer.from("# Plan\n");
  const pending = proposalView({ version: 4, sha256: sha(planBytes) });
  /** The pending plan's file, one page, as approve reads it to show its hash. */
  const artifact = () => ({
    proposalId: "p1",
    path: ".pi/plan/x.md",
    byteSize: planBytes.byteLength,
    sha256: sha(planBytes),
    recordedSha256: pending.sha256,
    matchesRecord: sha(planBytes) === pending.sha256,
    offset: 0,
    data: planBytes.toString("base64"),
    nextOffset: null,
  });
  const approved = proposalView({
    version: 5,
    status: "approved",
    action: "approve",
    targetPermissionMode: "accept-edits",
    executionId: "x1",
    executionState: "queued",
  });

  it("fills the identity from plans.get, subscribes before resolving and follows the execution", async () => {
    const { bus, log } = fakeBus(
      { "plans.get": () => pending, "artifacts.read": artifact, "plans.resolve": () => approved },
      {
        "plans.resolve": [
          ev("turn.ended", { turnId: "t1", status: "completed" }),
          ev("turn.started", { turnId: "t2", kind: "execution" }),
          ev("tool.called", { turnId: "t2", toolCallId: "c9", tool: "Write", args: { path: "GREETING.md" } }),
          ev("turn.ended", { turnId: "t2", status: "completed" }),
        ],
      },
    );
    const r = await cli(["plans", "approve", "p1", "--mode", "accept-edits", "--wait"], bus);
    expect(r.code).toBe(0);
    expect(log.slice(0, 4)).toEqual([
      'call plans.get {"proposalId":"p1"}',
      'call artifacts.read {"proposalId":"p1","offset":0}',
      "subscribe s1",
      'call plans.resolve {"proposalId":"p1","sessionId":"s1","turnId":"t1","toolCallId":"call-1","version":4,"action":"approve","targetPermissionMode":"accept-edits"}',
    ]);
    expect(r.stdout).toContain("plan approved: p1 (permission mode accept-edits); execution x1 queued");
    expect(r.stdout).toContain("turn started: t2 (execution)");
    expect(r.stdout).not.toContain("turn ended: t1");
    expect(r.stdout).toContain("turn ended: t2 completed");
  });

  it("without --wait returns after the reply", async () => {
    const { bus, log } = fakeBus({
      "plans.get": () => pending,
      "artifacts.read": artifact,
      "plans.resolve": () => approved,
    });
    const r = await cli(["plans", "approve", "p1", "--mode", "auto"], bus);
    expect(r.code).toBe(0);
    expect(log.some((l) => l.startsWith("subscribe"))).toBe(false);
  });

  it("a replayed approve of a finished execution ends at once", async () => {
    const { bus } = fakeBus({
      "plans.get": () => approved,
      "plans.resolve": () => ({ ...approved, executionState: "completed" }),
    });
    const r = await cli(
      ["plans", "approve", "p1", "--mode", "accept-edits", "--wait", "--timeout", "5"],
      bus,
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("execution x1 completed");
  });

  it("reject sends no mode", async () => {
    const { bus, log } = fakeBus({
      "plans.get": () => pending,
      "plans.resolve": () => proposalView({ status: "rejected", action: "reject" }),
    });
    const r = await cli(["plans", "reject", "p1"], bus);
    expect(r.code).toBe(0);
    expect(log[1]).toBe(
      'call plans.resolve {"proposalId":"p1","sessionId":"s1","turnId":"t1","toolCallId":"call-1","version":4,"action":"reject"}',
    );
    expect(r.stdout).toBe("plan rejected: p1; the session stays in Plan\n");
  });
});
