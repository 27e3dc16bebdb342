import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AppError } from "../protocol/app-error.ts";
import type { SessionEvent } from "../protocol/events.ts";
import type { CliBus, EventSubscription } from "./cli-bus.ts";
import { cli } from "./test-cli.ts";
import { ev, proposalView } from "./test-events.ts";

type Handler = (params: unknown) => unknown;

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

/** A bus double: answers calls from a table, records the order of calls and subscriptions. */
function fakeBus(handlers: Record<string, Handler>, eventsAfter: Record<string, SessionEvent[]> = {}) {
  const log: string[] = [];
  const queue: SessionEvent[] = [];
  let subscribed = false;
  const bus: CliBus = {
    async call<T>(method: string, params?: unknown): Promise<T> {
      log.push(`call ${method} ${JSON.stringify(params)}`);
      const h = handlers[method];
      if (!h) throw new AppError("UNKNOWN_METHOD", `no ${method}`);
      const result = h(params);
      if (subscribed) queue.push(...(eventsAfter[method] ?? []));
      return result as T;
    },
    async subscribe(sessionId: string | null): Promise<EventSubscription> {
      log.push(`subscribe ${sessionId}`);
      subscribed = true;
      return {
        async next(deadline: number) {
          const e = queue.shift();
          if (e) return e;
          await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now())));
          return null;
        },
        close() {
          log.push("unsubscribe");
        },
      };
    },
    async close() {
      log.push("close");
    },
  };
  return { bus, log };
}

describe("usage errors are refused before anything is sent", () => {
  it.each([
    [["plans", "approve", "p1"]],
    [["plans", "approve", "p1", "--mode", "inherit"]],
    [["plans", "approve", "p1", "--mode", ""]],
    [["session", "create"]],
    [["session", "create", "--project", "p1", "--mode", "chat"]],
    [["session", "create", "--project", "p1", "--demo", "--model", "a/b"]],
    [["session", "mode", "s1", "chat"]],
    [["session", "permissions", "s1", "yolo"]],
    [["prompt", "s1", "hi", "--timeout", "never"]],
    [["nonsense"]],
  ])("%j exits 2", async (args) => {
    const r = await cli(args, null);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^error USAGE: /m);
    expect(r.connected).toBe(false);
  });

  it("refuses an unreadable --script file", async () => {
    const r = await cli(["session", "create", "--project", "p1", "--script", "missing.json"], null);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("cannot read --script missing.json");
  });

  it("without a command prints help to stderr, exit 2", async () => {
    const r = await cli([], null);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("Usage: pihost");
  });

  it("--version prints the CLI's and the protocol's version, exit 0", async () => {
    const r = await cli(["--version"], null);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^pihost \d+\.\d+\.\d+ \(protocol 1\)\n$/);
  });

  it("with --json an error is one JSON object on stderr, with its code, message and retriability", async () => {
    const { bus } = fakeBus({
      "host.hello": () => {
        throw new AppError("HOST_FENCED", "superseded");
      },
    });
    const r = await cli(["--json", "hello"], bus);
    expect(r.code).toBe(3); // retriable
    expect(JSON.parse(r.stderr)).toEqual({
      error: { code: "HOST_FENCED", message: "superseded", retriable: true },
    });
    const usage = await cli(
      ["--json", "session", "create", "--project", "p1", "--script", "missing.json"],
      null,
    );
    expect(usage.code).toBe(2);
    expect(JSON.parse(usage.stderr).error).toMatchObject({ code: "USAGE", retriable: false });
  });

  it("prints help with exit 0", async () => {
    const r = await cli(["--help"], null);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: pihost");
  });
});

describe("commands", () => {
  it("status and models say what the host holds and what its workers serve", async () => {
    const { bus } = fakeBus({
      "host.status": () => ({
        hostId: "h1",
        sessions: { active: 2, passivated: 1, degraded: [] },
        uptimeMs: 61_000,
        reachable: { database: true, nats: false },
        projectOverlaps: [],
      }),
      "models.list": () => ({
        models: [
          { provider: "local", model: "qwen", workers: 2, keyConfigured: true },
          { provider: "openai", model: "gpt-x", workers: 1, keyConfigured: false },
        ],
        default: null,
      }),
    });
    const s = await cli(["status"], bus);
    expect(s.code).toBe(0);
    expect(s.stdout).toContain("host h1, up 61 s");
    expect(s.stdout).toContain("database: reachable, NATS: NOT reachable");
    expect(s.stdout).toContain("sessions: 2 active, 1 passivated, 0 degraded");
    const m = await cli(["models"], bus);
    expect(m.stdout.split("\n")).toEqual([
      "local/qwen  2 workers",
      "openai/gpt-x  1 worker, no key configured",
      "default: none (sessions must name a model)",
      "",
    ]);
    const j = await cli(["models", "--json"], bus);
    expect(JSON.parse(j.stdout).models).toHaveLength(2);
  });

  it("hello sends the protocol version", async () => {
    const { bus, log } = fakeBus({
      "host.hello": () => ({ protocolVersion: 1, hostId: "h1", devMode: true }),
    });
    const r = await cli(["hello"], bus);
    expect(r.code).toBe(0);
    expect(log[0]).toBe('call host.hello {"protocolVersion":1}');
    expect(r.stdout).toContain("host h1: protocol 1");
  });

  it("project create -q prints only the id and sends an absolute root", async () => {
    const { bus, log } = fakeBus({
      "projects.create": (p) => ({
        id: "pr1",
        createdAt: "x",
        ...(p as { name: string; workspaceRoot: string }),
      }),
    });
    const r = await cli(["project", "create", "--name", "demo", "--root", "ws", "-q"], bus);
    expect(r).toMatchObject({ code: 0, stdout: "pr1\n", stderr: "" });
    expect(log[0]).toBe('call projects.create {"name":"demo","workspaceRoot":"/home/alice/ws"}');
  });

  it("project configure sends the settings and prints the project; nothing to change is a usage error", async () => {
    const view = {
      id: "pr1",
      name: "demo",
      workspaceRoot: "/ws",
      owner: "alice",
      network: true,
      previewOrigins: ["https://docs.example.com"],
      version: 2,
      createdAt: "x",
      updatedAt: "y",
    };
    const { bus, log } = fakeBus({ "projects.configure": () => view });
    const args = [
      "project",
      "configure",
      "pr1",
      "--network",
      "on",
      "--preview-origin",
      "https://docs.example.com",
    ];
    const r = await cli([...args, "--expect-version", "1"], bus);
    expect(r.code).toBe(0);
    expect(log[0]).toBe(
      'call projects.configure {"projectId":"pr1","network":true,"previewOrigins":["https://docs.example.com"],"expectedVersion":1}',
    );
    expect(r.stdout).toContain("network:         on");
    expect(r.stdout).toContain("preview origins: https://docs.example.com");
    const cleared = await cli(["project", "configure", "pr1", "--clear-preview-origins"], bus);
    expect(cleared.code).toBe(0);
    expect(log).toContain('call projects.configure {"projectId":"pr1","previewOrigins":[]}');
    for (const bad of [
      ["project", "configure", "pr1"],
      ["project", "configure", "pr1", "--network", "yes"],
      ["project", "configure", "pr1", "--network", "on", "--expect-version", "v1"],
      ["project", "configure", "pr1", "--clear-preview-origins", "--preview-origin", "https://a.example"],
    ]) {
      const calls = log.filter((l) => l.startsWith("call")).length;
      const u = await cli(bad, bus);
      expect({ bad, code: u.code }).toEqual({ bad, code: 2 });
      expect(log.filter((l) => l.startsWith("call")).length).toBe(calls);
    }
  });

  it("session create --script sends the steps; --json prints the raw result", async () => {
    const view = { id: "s1", mode: "plan" };
    const { bus, log } = fakeBus({ "session.create": () => view });
    const steps = [{ text: "hello" }];
    const r = await cli(
      [
        "--json",
        "session",
        "create",
        "--project",
        "pr1",
        "--mode",
        "plan",
        "--script",
        "s.json",
        "--approver",
        "bob",
      ],
      bus,
      { "s.json": JSON.stringify(steps) },
    );
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(view);
    expect(JSON.parse(log[0]!.replace("call session.create ", ""))).toEqual({
      projectId: "pr1",
      mode: "plan",
      model: { provider: "scripted", model: "script", script: steps },
      approvers: ["bob"],
    });
  });

  it("host errors print `error CODE: message` and exit 1", async () => {
    const { bus } = fakeBus({
      "plans.get": () => {
        throw new AppError("PLAN_NOT_FOUND");
      },
    });
    const r = await cli(["plans", "reject", "p404"], bus);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe("error PLAN_NOT_FOUND: No plan proposal with that id.\n");
  });

  describe("plans show", () => {
    const content = "# Plan ✓\n\nWrite GREETING.md — café 🙂\n\n";
    /** artifacts.read over `file()` as the host pages it, `page` bytes at a time. */
    function pagedBus(file: () => Buffer, recorded: string, page = 5) {
      return fakeBus({
        "artifacts.read": (params) => {
          const bytes = file();
          const { offset = 0 } = params as { offset?: number };
          if (offset > bytes.byteLength) throw new AppError("INVALID_PARAMS", "past the end");
          const end = Math.min(bytes.byteLength, offset + page);
          return {
            proposalId: "p1",
            path: ".pi/plan/x.md",
            byteSize: bytes.byteLength,
            sha256: sha(bytes),
            recordedSha256: recorded,
            matchesRecord: sha(bytes) === recorded,
            offset,
            data: bytes.subarray(offset, end).toString("base64"),
            nextOffset: end < bytes.byteLength ? end : null,
          };
        },
      });
    }

    it("reassembles every page and prints the exact bytes", async () => {
      const bytes = Buffer.from(content);
      const { bus, log } = pagedBus(() => bytes, sha(bytes));
      const r = await cli(["plans", "show", "p1"], bus);
      expect(r).toMatchObject({
        code: 0,
        stdout: content,
        stderr: `plan file: .pi/plan/x.md (${bytes.byteLength} bytes), sha256 ${sha(bytes)} matches the record\n`,
      });
      const offsets = log.filter((l) => l.startsWith("call")).map((l) => JSON.parse(l.split(" ")[2]!).offset);
      expect(offsets).toEqual(Array.from({ length: Math.ceil(bytes.byteLength / 5) }, (_, i) => i * 5));
    });

    it("an empty file is one page and prints nothing", async () => {
      const { bus } = pagedBus(() => Buffer.alloc(0), sha(Buffer.alloc(0)));
      expect(await cli(["plans", "show", "p1"], bus)).toMatchObject({ code: 0, stdout: "" });
    });

    it("--json prints its own hash and comparison and the content", async () => {
      const bytes = Buffer.from(content);
      const { bus } = pagedBus(() => bytes, sha(bytes));
      const r = await cli(["--json", "plans", "show", "p1"], bus);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout)).toEqual({
        proposalId: "p1",
        path: ".pi/plan/x.md",
        byteSize: bytes.byteLength,
        sha256: sha(bytes),
        recordedSha256: sha(bytes),
        matchesRecord: true,
        content,
      });
    });

    it("a file changed between pages: prints what it read, warns PLAN_ARTIFACT_HASH_MISMATCH, exit 1", async () => {
      const before = Buffer.from(content);
      const after = Buffer.from(content.replace("Write", "Wipe!"));
      let reads = 0;
      // Every page the host reports matchesRecord of its own read; only the CLI sees the mix.
      const { bus } = pagedBus(() => (reads++ < 2 ? before : after), sha(before));
      const r = await cli(["plans", "show", "p1"], bus);
      const mixed = Buffer.concat([before.subarray(0, 10), after.subarray(10)]);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe(mixed.toString("utf8"));
      expect(r.stderr).toBe(
        `warning PLAN_ARTIFACT_HASH_MISMATCH: the plan file .pi/plan/x.md no longer matches what was submitted: sha256 ${sha(mixed)}, recorded ${sha(before)}; the host refuses to approve it\n`,
      );
    });

    it("a page that does not advance is an error, not a loop", async () => {
      const { bus } = fakeBus({
        "artifacts.read": () => ({
          proposalId: "p1",
          path: "x",
          byteSize: 4,
          sha256: "s",
          recordedSha256: "s",
          matchesRecord: true,
          offset: 0,
          data: "",
          nextOffset: 0,
        }),
      });
      const r = await cli(["plans", "show", "p1"], bus);
      expect(r.code).toBe(3); // INTERNAL is retriable
      expect(r.stderr).toMatch(/^error INTERNAL: /);
    });
  });

  it("plans pending -q prints one id per line", async () => {
    const { bus, log } = fakeBus({
      "plans.pending": () => ({ proposals: [proposalView(), proposalView({ proposalId: "p2" })] }),
    });
    const r = await cli(["plans", "pending", "--session", "s1", "-q"], bus);
    expect(r.stdout).toBe("p1\np2\n");
    expect(log[0]).toBe('call plans.pending {"sessionId":"s1","limit":200}');
  });
});

describe("permissions", () => {
  it("lists waiting prompts and answers them with the exact decision", async () => {
    const request = {
      requestId: "req_1",
      sessionId: "s1",
      tool: "Write",
      risk: "medium",
      preview: { path: "a.txt" },
      deadline: "2026-11-30T10:00:00.000Z",
    };
    const { bus, log } = fakeBus({
      "permissions.pending": () => ({ requests: [request] }),
      "permissions.resolve": (p) => ({ ...request, decision: (p as { decision: string }).decision }),
    });
    const listed = await cli(["permissions", "pending", "--session", "s1"], bus);
    expect(listed.stdout).toContain("req_1  Write (medium)");
    for (const [cmd, decision] of [
      ["allow", "allow-once"],
      ["allow-session", "allow-session"],
      ["deny", "deny"],
    ]) {
      const r = await cli(["permissions", cmd!, "req_1"], bus);
      expect(r).toMatchObject({ code: 0, stdout: `req_1: ${decision}\n` });
    }
    expect(log.filter((l) => l.startsWith("call permissions.resolve"))).toEqual([
      'call permissions.resolve {"requestId":"req_1","decision":"allow-once"}',
      'call permissions.resolve {"requestId":"req_1","decision":"allow-session"}',
      'call permissions.resolve {"requestId":"req_1","decision":"deny"}',
    ]);
  });
});

describe("watch", () => {
  it("a host that cannot answer at the start does not end the watch; a final refusal does", async () => {
    const busy = fakeBus({
      "session.get": () => ({ id: "s1" }),
      "permissions.pending": () => {
        throw new AppError("HOST_UNAVAILABLE", "no host answers");
      },
      "plans.pending": () => ({ proposals: [] }),
    });
    const r = await cli(["watch", "s1", "--for", "0.2"], busy.bus);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^notice HOST_UNAVAILABLE: could not list what waits for a person/);
    expect(r.stdout).toMatch(/^watching session s1/);
    const refused = fakeBus({
      "session.get": () => {
        throw new AppError("FORBIDDEN", "not yours");
      },
    });
    const f = await cli(["watch", "s1", "--for", "0.2"], refused.bus);
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(/^error FORBIDDEN: /);
  });
});

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
