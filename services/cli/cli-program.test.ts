import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AppError } from "../protocol/app-error.ts";
import { cli } from "./test-cli.ts";
import { proposalView } from "./test-events.ts";

import { fakeBus } from "./test-bus.ts";

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

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
