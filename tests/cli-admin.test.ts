// `pihost settings|scheduled|plugins|project members|audit` against the real host on real Postgres
// and NATS, as alice and as bob: each command's human lines, its --json output (the host's result as
// received, compared with the same call made directly), exit codes (0; a refusal is 1 with
// `error CODE: ...`, or one `{error}` object with --json; a bad option is 2 and connects to nothing).
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import type { AuditPage } from "../services/protocol/audit-schemas.ts";
import type { PluginView } from "../services/protocol/plugin-schemas.ts";
import type { ScheduledRunView, ScheduledTaskView } from "../services/protocol/scheduling-schemas.ts";
import type { ProjectMembersView } from "../services/protocol/schemas.ts";
import { type CliRun, jsonError, jsonOut, pihost } from "./support/cli.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("cliadmin", { host: true });

const cli = (args: string[], principal = "alice") => pihost(stack, args, principal);

/** A command line that must be refused locally: exit 2, `error USAGE`, and no connection at all. */
async function usage(args: string[], principal = "alice"): Promise<CliRun> {
  let connected = false;
  const r = await pihost(stack, args, principal, {
    connect: async () => {
      connected = true;
      throw new Error("a usage error must send nothing");
    },
  });
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(2);
  expect(r.stderr).toMatch(/^error USAGE: /);
  expect(r.stdout).toBe("");
  expect(connected).toBe(false);
  return r;
}

/** A refusal by the host: exit 1 and `error CODE: ...` in human mode; one JSON error with --json. */
async function refused(args: string[], code: string, principal = "alice") {
  const r = await cli(args, principal);
  expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(1);
  expect(r.stdout).toBe("");
  expect(r.stderr).toMatch(new RegExp(`^error ${code}: .+\\n$`));
  const j = await cli(["--json", ...args], principal);
  expect(j.code).toBe(1);
  expect(j.stdout).toBe("");
  expect(jsonError(j)).toMatchObject({ code, retriable: false });
  expect(j.stderr.trim().split("\n")).toHaveLength(1);
}

function ok(r: CliRun): string[] {
  expect(r.code, r.stderr).toBe(0);
  expect(r.stderr).toBe("");
  return r.stdout.trimEnd().split("\n");
}

async function newProject(name: string, principal = "alice"): Promise<string> {
  const root = stack.newWorkspace(`${name}-${Math.random().toString(36).slice(2, 8)}`);
  const [id] = ok(await cli(["project", "create", "-q", "--name", name, "--root", root], principal));
  return id as string;
}

function file(name: string, content: string): string {
  const f = path.join(stack.dir, name);
  writeFileSync(f, content);
  return f;
}

describe("pihost settings", () => {
  it("show and set the app defaults; inherit and unknown values are usage errors; bob may in development mode", async () => {
    expect(ok(await cli(["settings", "show"]))).toEqual([
      "default mode:            agent",
      "default permission mode: ask",
    ]);
    const shown = await cli(["--json", "settings", "show"]);
    expect(jsonOut(shown)).toEqual(await stack.client("alice").call("settings.get"));

    expect(ok(await cli(["settings", "set", "--default-mode", "plan"]))).toEqual([
      "default mode:            plan",
      "default permission mode: ask",
    ]);
    const set = await cli(["settings", "set", "--default-permission-mode", "accept-edits", "--json"]);
    expect(jsonOut(set)).toEqual({ defaultMode: "plan", defaultPermissionMode: "accept-edits" });

    for (const args of [
      ["settings", "set", "--default-permission-mode", "inherit"],
      ["settings", "set", "--default-mode", "chat"],
      ["settings", "set"],
      ["settings", "set", "--colour", "blue"],
    ])
      await usage(args);
    const j = await pihost(stack, ["--json", "settings", "set", "--default-permission-mode", "inherit"]);
    expect(j.code).toBe(2);
    expect(jsonError(j).code).toBe("USAGE");

    // Development mode: any principal changes the app settings (production: PI_SETTINGS_ADMINS only).
    expect(
      ok(
        await cli(["settings", "set", "--default-mode", "agent", "--default-permission-mode", "ask"], "bob"),
      ),
    ).toEqual(["default mode:            agent", "default permission mode: ask"]);
    expect(await stack.client("alice").call("settings.get")).toEqual({
      defaultMode: "agent",
      defaultPermissionMode: "ask",
    });
  });
});

describe("pihost scheduled", () => {
  it("create, list, update, run, runs and delete a task as its owner; bob is FORBIDDEN; unknown ids NOT_FOUND", async () => {
    const projectId = await newProject("sched");
    const script = file("sched-script.json", JSON.stringify([{ text: "scheduled done" }]));
    const common = ["--cron", "0 9 * * 1-5", "--timezone", "Europe/Berlin", "--project", projectId];

    const created = ok(
      await cli([
        "scheduled",
        "create",
        "--name",
        "weekday review",
        ...common,
        "--prompt",
        "review",
        "--script",
        script,
      ]),
    );
    expect(created).toHaveLength(1);
    expect(created[0]).toMatch(
      /^task task_\S+ created: 0 9 \* \* 1-5 \(Europe\/Berlin\), next run \S+Z, mode agent, permissions inherit$/,
    );
    const taskId = created[0]!.split(" ")[1]!;

    const promptFile = file("sched-prompt.txt", "from a file\nsecond line");
    const [quietId] = ok(
      await cli([
        "scheduled",
        "create",
        "-q",
        "--name",
        "second",
        ...common,
        "--prompt-file",
        promptFile,
        "--enabled",
        "off",
      ]),
    );
    expect(quietId).toMatch(/^task_/);
    const jsonCreate = await cli([
      "--json",
      "scheduled",
      "create",
      "--name",
      "third",
      ...common,
      "--prompt",
      "p",
    ]);
    const third = jsonOut(jsonCreate) as ScheduledTaskView;
    expect(third).toMatchObject({ name: "third", owner: "alice", mode: "agent", permissionMode: "inherit" });

    const listed = ok(await cli(["scheduled", "list"]));
    expect(listed).toHaveLength(3);
    expect(listed.find((l) => l.startsWith(quietId!))).toBe(
      `${quietId}  disabled  0 9 * * 1-5 (Europe/Berlin)  next none  agent/inherit  project ${projectId}  "second"`,
    );
    expect(jsonOut(await cli(["--json", "scheduled", "list"]))).toEqual(
      await stack.client("alice").call("scheduled.list"),
    );
    const secondTask = (await stack.client("alice").call("scheduled.list")).tasks.find(
      (t) => t.id === quietId,
    );
    expect(secondTask?.prompt).toBe("from a file\nsecond line");
    expect(ok(await cli(["scheduled", "list"], "bob"))).toEqual(["no scheduled tasks"]);

    const updated = ok(
      await cli(["scheduled", "update", quietId!, "--enabled", "on", "--permission-mode", "auto"]),
    );
    expect(updated[0]).toBe(`task ${quietId} "second"`);
    expect(updated).toContain("  enabled:     yes");
    expect(updated).toContain("  permissions: auto");
    expect(updated).toContain('  prompt:      "from a file\\nsecond line"');
    const jsonUpdate = jsonOut(await cli(["--json", "scheduled", "update", quietId!, "--name", "renamed"]));
    expect(jsonUpdate).toMatchObject({ id: quietId, name: "renamed", permissionMode: "auto", enabled: true });

    // The host validates cron and zone: passed as given, refused there (exit 1).
    await refused(["scheduled", "update", quietId!, "--cron", "61 * * * *"], "INVALID_PARAMS");
    await refused(
      [
        "scheduled",
        "create",
        "--name",
        "x",
        ...common.slice(0, 2),
        "--timezone",
        "Mars/Olympus",
        "--project",
        projectId,
        "--prompt",
        "p",
      ],
      "INVALID_PARAMS",
    );
    await refused(
      ["scheduled", "create", "--name", "x", ...common.slice(0, 4), "--project", "prj_nope", "--prompt", "p"],
      "PROJECT_NOT_FOUND",
    );

    // Run now: the new run id with -q; the run as the host returned it with --json.
    const [runId] = ok(await cli(["scheduled", "run", "-q", taskId]));
    expect(runId).toMatch(/^\S+$/);
    const started = ok(await cli(["scheduled", "run", third.id]));
    expect(started[0]).toMatch(
      new RegExp(`^run \\S+ of task ${third.id}: running, session \\S+, turn \\S+$`),
    );
    const jsonRun = jsonOut(await cli(["--json", "scheduled", "run", quietId!])) as ScheduledRunView;
    expect(jsonRun).toMatchObject({ taskId: quietId, trigger: "manual", status: "running" });

    const runs = ok(await cli(["scheduled", "runs", taskId]));
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatch(
      new RegExp(`^${runId}  (running|completed)  manual  scheduled for \\S+  session \\S+  turn \\S+`),
    );
    expect(jsonOut(await cli(["--json", "scheduled", "runs", taskId, "--limit", "1"]))).toEqual(
      await stack.client("alice").call("scheduled.runs", { taskId, limit: 1 }),
    );

    // bob: every change, run and read of alice's task is FORBIDDEN.
    for (const args of [
      ["scheduled", "update", taskId, "--mode", "plan"],
      ["scheduled", "run", taskId],
      ["scheduled", "runs", taskId],
      ["scheduled", "delete", taskId],
    ])
      await refused(args, "FORBIDDEN", "bob");
    for (const args of [
      ["scheduled", "run", "task_missing"],
      ["scheduled", "delete", "task_missing"],
    ])
      await refused(args, "SCHEDULED_TASK_NOT_FOUND");
    // A Plan task is refused when it runs.
    ok(await cli(["scheduled", "update", quietId!, "--mode", "plan"]));
    await refused(["scheduled", "run", quietId!], "PLAN_REQUIRES_INTERACTIVE_SESSION");

    // Usage errors: nothing is sent.
    for (const args of [
      ["scheduled", "create", "--name", "x", ...common],
      ["scheduled", "create", "--name", "x", ...common, "--prompt", "p", "--prompt-file", promptFile],
      [
        "scheduled",
        "create",
        "--name",
        "x",
        ...common,
        "--prompt",
        "p",
        "--model",
        "a/b",
        "--script",
        script,
      ],
      ["scheduled", "create", "--name", "x", ...common, "--prompt", "p", "--mode", "chat"],
      ["scheduled", "create", "--name", "x", ...common, "--prompt", "p", "--model", "nomodel"],
      [
        "scheduled",
        "create",
        "--name",
        "x",
        ...common,
        "--prompt",
        "p",
        "--script",
        path.join(stack.dir, "none.json"),
      ],
      ["scheduled", "update", taskId],
      ["scheduled", "update", taskId, "--enabled", "yes"],
      ["scheduled", "update", taskId, "--permission-mode", "yolo"],
      ["scheduled", "runs", taskId, "--limit", "0"],
      ["scheduled", "run"],
    ])
      await usage(args);

    expect(ok(await cli(["scheduled", "delete", taskId]))).toEqual([`task ${taskId} deleted`]);
    expect(jsonOut(await cli(["--json", "scheduled", "delete", third.id]))).toEqual({
      taskId: third.id,
      deleted: true,
    });
    await refused(["scheduled", "runs", taskId], "SCHEDULED_TASK_NOT_FOUND");
    ok(await cli(["scheduled", "delete", quietId!]));
    expect(ok(await cli(["scheduled", "list"]))).toEqual(["no scheduled tasks"]);
  });
});

describe("pihost plugins", () => {
  it("register from a manifest file, list, disable and enable (each twice: the same state, exit 0); unknown PLUGIN_NOT_FOUND", async () => {
    const manifest = {
      id: "cliecho",
      name: "CLI Echo",
      tools: [
        { name: "cliecho", description: "Echo the text back.", parameters: { type: "object" }, risk: "low" },
        { name: "clipeek", description: "Peek.", parameters: { type: "object" }, risk: "extreme" },
      ],
    };
    const f = file("manifest.json", JSON.stringify(manifest));
    expect(ok(await cli(["plugins", "register", f]))).toEqual([
      'plugin cliecho "CLI Echo": enabled, registered by alice, updated ' +
        (await stack.client("alice").call("plugins.list")).plugins[0]!.updatedAt,
      '  tool cliecho (low risk): "Echo the text back."',
      '  tool clipeek (medium risk): "Peek."',
    ]);
    const again = jsonOut(await cli(["--json", "plugins", "register", f])) as PluginView;
    expect(again).toMatchObject({ id: "cliecho", enabled: true, registeredBy: "alice" });

    expect(ok(await cli(["plugins", "list"]))).toEqual([
      'cliecho  enabled   2 tools: cliecho (low), clipeek (medium)  "CLI Echo"',
    ]);
    expect(jsonOut(await cli(["--json", "plugins", "list"]))).toEqual(
      await stack.client("alice").call("plugins.list"),
    );

    for (const [verb, state] of [
      ["disable", "disabled"],
      ["disable", "disabled"],
      ["enable", "enabled"],
      ["enable", "enabled"],
    ] as const) {
      const lines = ok(await cli(["plugins", verb, "cliecho"]));
      expect(lines[0]).toMatch(new RegExp(`^plugin cliecho "CLI Echo": ${state}, `));
    }
    // Repeating a state changes nothing: the same view (updatedAt included), one audit row per change.
    const d1 = jsonOut(await cli(["--json", "plugins", "disable", "cliecho"])) as PluginView;
    const d2 = jsonOut(await cli(["--json", "plugins", "disable", "cliecho"])) as PluginView;
    expect(d1.enabled).toBe(false);
    expect(d2).toEqual(d1);
    const audits = await stack.db.pool.query(
      "SELECT action FROM audit_log WHERE action LIKE 'plugin.%able' AND details->>'pluginId' = 'cliecho' ORDER BY id",
    );
    expect(audits.rows.map((r) => r.action)).toEqual(["plugin.disable", "plugin.enable", "plugin.disable"]);

    // Development mode: bob may manage plugins too (production: PI_SETTINGS_ADMINS only).
    expect(ok(await cli(["plugins", "enable", "cliecho"], "bob"))[0]).toMatch(/: enabled, /);

    await refused(["plugins", "enable", "nope"], "PLUGIN_NOT_FOUND");
    await refused(["plugins", "disable", "nope"], "PLUGIN_NOT_FOUND", "bob");
    const builtin = file(
      "builtin.json",
      JSON.stringify({ id: "bad", tools: [{ ...manifest.tools[0], name: "Bash" }] }),
    );
    await refused(["plugins", "register", builtin], "INVALID_PARAMS");

    for (const args of [
      ["plugins", "register", path.join(stack.dir, "missing.json")],
      ["plugins", "register", file("notjson.json", "{ id: ")],
      ["plugins", "register", file("array.json", "[]")],
      ["plugins", "enable"],
      ["plugins", "frobnicate", "cliecho"],
    ])
      await usage(args);
  });
});

describe("pihost project members", () => {
  it("the owner lists, adds and removes; a member lists; an outsider and a member changing members are FORBIDDEN", async () => {
    const projectId = await newProject("members");
    const listed = ok(await cli(["project", "members", projectId]));
    expect(listed).toHaveLength(2);
    expect(listed[0]).toBe(`project ${projectId}: owner alice, 1 member`);
    expect(listed[1]).toMatch(/^ {2}alice {2}owner {2}added \S+( by alice)?$/);
    expect(jsonOut(await cli(["--json", "project", "members", projectId]))).toEqual(
      await stack.client("alice").call("projects.members.list", { projectId }),
    );

    await refused(["project", "members", projectId], "FORBIDDEN", "bob");
    const added = ok(await cli(["project", "members", "add", projectId, "bob"]));
    expect(added[0]).toBe(`project ${projectId}: owner alice, 2 members`);
    expect(added[2]).toMatch(/^ {2}bob {2}member {2}added \S+ by alice$/);
    // Adding again changes nothing and succeeds.
    const twice = jsonOut(
      await cli(["--json", "project", "members", "add", projectId, "bob"]),
    ) as ProjectMembersView;
    expect(twice.members.map((m) => m.principal)).toEqual(["alice", "bob"]);

    // bob, now a member, reads the list but may not change it.
    expect(ok(await cli(["project", "members", projectId], "bob"))[0]).toBe(
      `project ${projectId}: owner alice, 2 members`,
    );
    await refused(["project", "members", "add", projectId, "carol"], "FORBIDDEN", "bob");
    await refused(["project", "members", "remove", projectId, "alice"], "FORBIDDEN", "bob");
    await refused(["project", "members", projectId], "FORBIDDEN", "carol");
    await refused(["project", "members", "remove", projectId, "alice"], "INVALID_PARAMS");
    await refused(["project", "members", "prj_nope"], "PROJECT_NOT_FOUND");
    await refused(["project", "members", "add", "prj_nope", "bob"], "PROJECT_NOT_FOUND");

    const removed = jsonOut(
      await cli(["--json", "project", "members", "remove", projectId, "bob"]),
    ) as ProjectMembersView;
    expect(removed.members.map((m) => m.principal)).toEqual(["alice"]);
    expect(ok(await cli(["project", "members", "remove", projectId, "bob"]))).toHaveLength(2);
    await refused(["project", "members", projectId], "FORBIDDEN", "bob");

    for (const args of [
      ["project", "members"],
      ["project", "members", "add", projectId],
      ["project", "members", "remove"],
    ])
      await usage(args);
  });
});

describe("pihost audit", () => {
  it("one line per row, newest first; the `more:` line continues without gaps; bob reads none of alice's rows", async () => {
    const projectId = await newProject("audited");
    ok(await cli(["project", "members", "add", projectId, "bob"]));
    ok(await cli(["project", "members", "remove", projectId, "bob"]));

    const all = await stack.client("alice").call("audit.list", { projectId });
    expect(all.entries.map((e) => e.action)).toEqual([
      "project.members.remove",
      "project.members.add",
      "project.create",
    ]);

    const first = ok(await cli(["audit", "--project", projectId, "--limit", "2"]));
    expect(first).toHaveLength(3);
    expect(first[0]).toMatch(
      new RegExp(
        `^${all.entries[0]!.id}  \\S+Z  alice  project\\.members\\.remove  \\S+  project=${projectId}  \\{.*"member":"bob".*\\}$`,
      ),
    );
    expect(first[1]).toMatch(new RegExp(`^${all.entries[1]!.id}  .*  project\\.members\\.add  `));
    expect(first[2]).toBe(
      `more: pihost audit --project ${projectId} --limit 2 --before ${all.entries[1]!.id}`,
    );

    // The printed command, run as printed, returns the rest and no further `more:` line.
    const rest = ok(await cli(first[2]!.replace(/^more: pihost /, "").split(" ")));
    expect(rest).toHaveLength(1);
    expect(rest[0]).toMatch(new RegExp(`^${all.entries[2]!.id}  .*  project\\.create  `));

    const j = jsonOut(await cli(["--json", "audit", "--project", projectId, "--limit", "2"])) as AuditPage;
    expect(j).toEqual(await stack.client("alice").call("audit.list", { projectId, limit: 2 }));
    expect(j.next).toBe(all.entries[1]!.id);

    // Bob reads only the rows that name him: who added and removed him (docs/protocol.md "Audit").
    const bobs = (jsonOut(await cli(["--json", "audit", "--project", projectId], "bob")) as AuditPage)
      .entries;
    expect(bobs.map((e) => [e.action, e.details.member])).toEqual([
      ["project.members.remove", "bob"],
      ["project.members.add", "bob"],
    ]);
    expect(ok(await cli(["audit", "--project", projectId], "bob"))).toHaveLength(2);
    await refused(["audit", "--session", "not a token"], "INVALID_PARAMS");

    // --session: only that session's rows.
    const [sessionId] = ok(await cli(["session", "create", "-q", "--project", projectId, "--demo"]));
    const bySession = ok(await cli(["audit", "--session", sessionId!]));
    expect(bySession.length).toBeGreaterThan(0);
    expect(bySession.every((l) => l.includes(`  session=${sessionId}  `))).toBe(true);
    expect(bySession.map((l) => l.split("  ")[3])).toContain("session.create");

    for (const args of [
      ["audit", "--limit", "0"],
      ["audit", "--limit", "201"],
      ["audit", "--before", "abc"],
      ["audit", "--before"],
      ["audit", "extra"],
    ])
      await usage(args);
  });
});
