// Overlapping projects (issue #10 clause 2), as the attack: an outer project's Bash swaps an inner
// root for a symlink to /etc in a loop while the inner project is created, and nested creates race.
// Creating a root equal to, inside or containing another is PROJECT_ROOT_OVERLAPS (concurrent
// creates included); an overlap written by an earlier version is reported at start, shown in
// host.status, and every tool call in either project is refused before anything runs.
import { lstatSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createClock } from "../services/host/clock.ts";
import { createDb } from "../services/host/store/db.ts";
import {
  createProjectStore,
  overlappingProjects,
  rootsOverlap,
} from "../services/host/store/project-store.ts";
import { AppError } from "../services/protocol/app-error.ts";
import { agentTurnIn, openStackDir, toolCaller } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { refusalCode } from "./support/worker-double.ts";
import { unwrap } from "../services/protocol/result.ts";

const stack = useStack("projoverlap", {
  extra: { PI_TURN_LEASE_MS: String(3600_000) },
  prepare: openStackDir,
  host: true,
});

/** The refusal of a create that must not succeed. */
const refused = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("the create succeeded");
    },
    (e: unknown) => e as AppError,
  );

const create = (root: string, principal = "alice") =>
  stack.client(principal).call("projects.create", { name: path.basename(root), workspaceRoot: root });

const turnIn = (projectId: string) => agentTurnIn(stack, projectId);
const call = toolCaller(stack);

describe("overlapping project roots", () => {
  it("compares whole path components", () => {
    expect(rootsOverlap("/a/b", "/a/b")).toBe(true);
    expect(rootsOverlap("/a/b", "/a/b/c")).toBe(true);
    expect(rootsOverlap("/a/b/c", "/a/b")).toBe(true);
    expect(rootsOverlap("/a/b", "/a/bc")).toBe(false);
    expect(rootsOverlap("/a/bc", "/a/b")).toBe(false);
    expect(rootsOverlap("/", "/x")).toBe(true);
  });

  it("refuses an inner, an equal and a containing root while the outer's Bash swaps the inner for /etc", async () => {
    const outerRoot = stack.newWorkspace("outer");
    const innerRoot = path.join(outerRoot, "inner");
    mkdirSync(innerRoot);
    const outer = await create(outerRoot);
    const a = await turnIn(outer.id);
    // The swap loop runs in the outer's sandbox, in the background, while the creates are tried.
    const swap = call(a, "Bash", {
      command:
        "end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do mv inner inner.real 2>/dev/null; ln -sfn /etc inner; " +
        "rm -f inner; mv inner.real inner 2>/dev/null; done; rm -f inner; [ -d inner.real ] && mv inner.real inner; true",
    });
    const codes = new Set<string>();
    let created = 0;
    const deadline = Date.now() + 3500;
    while (Date.now() < deadline) {
      const err = await create(innerRoot).then(
        () => {
          created++;
          return null;
        },
        (e: unknown) => e,
      );
      if (err instanceof AppError) codes.add(err.code);
    }
    expect((await swap).isError).toBe(false);
    expect(created).toBe(0);
    // Inside the outer's root it overlaps; swapped for /etc it is not under a configured root.
    expect([...codes].every((c) => c === "PROJECT_ROOT_OVERLAPS" || c === "WORKSPACE_NOT_ALLOWED")).toBe(
      true,
    );
    expect(codes.has("PROJECT_ROOT_OVERLAPS")).toBe(true);

    const inside = await create(innerRoot).catch((e: AppError) => e);
    expect(inside).toMatchObject({
      code: "PROJECT_ROOT_OVERLAPS",
      details: { projectId: outer.id, relation: "inside" },
    });
    expect(await refusalCode(create(outerRoot))).toBe("PROJECT_ROOT_OVERLAPS");
    // A configured root is never a project root (tests/workspace-grants.test.ts): contain below it.
    expect(await refusalCode(create(stack.dir))).toBe("WORKSPACE_NOT_ALLOWED");
    const wrapper = stack.newWorkspace("wrapper");
    mkdirSync(path.join(wrapper, "p"));
    await create(path.join(wrapper, "p"));
    const containing = await create(wrapper).catch((e: AppError) => e);
    expect(containing).toMatchObject({ code: "PROJECT_ROOT_OVERLAPS", details: { relation: "contains" } });
    // A sibling whose name extends the outer's (`outer` / `outer2`) does not overlap it.
    const sibling = await create(stack.newWorkspace("outer2"));
    expect(sibling.workspaceRoot).toBe(`${outerRoot}2`);
  });

  it("of two concurrent creates of nested roots exactly one wins, round after round", async () => {
    for (let round = 0; round < 8; round++) {
      const outerRoot = stack.newWorkspace(`race-${round}`);
      const innerRoot = path.join(outerRoot, "in");
      mkdirSync(innerRoot);
      const order = round % 2 === 0 ? [outerRoot, innerRoot] : [innerRoot, outerRoot];
      const results = await Promise.allSettled(order.map((r) => create(r)));
      const won = results.filter((r) => r.status === "fulfilled");
      const lost = results.filter((r): r is PromiseRejectedResult => r.status === "rejected");
      expect(won, `round ${round}`).toHaveLength(1);
      expect(lost.map((r) => (r.reason as AppError).code)).toEqual(["PROJECT_ROOT_OVERLAPS"]);
    }
    expect(await overlappingProjects(stack.db.pool)).toEqual([]);
  });

  it("names another person's root only to who may see that project", async () => {
    const db = createDb(stack.db.url, { max: 2 });
    try {
      const store = createProjectStore({ db, clock: createClock(), workspaceRoots: [stack.dir] });
      // Mallory asks for the folder containing Bob's root: the refusal must not tell her where it is.
      const parent = stack.newWorkspace("bobs");
      const root = path.join(parent, "secret-name");
      mkdirSync(root);
      const bobs = unwrap(await store.create("bob", "bobs", root));
      const hidden = await refused(store.create("mallory", "m", parent).then(unwrap));
      expect(hidden).toMatchObject({ code: "PROJECT_ROOT_OVERLAPS", details: { projectId: bobs.id } });
      expect(JSON.stringify(hidden.details)).not.toContain("secret-name");
      expect(hidden.message).not.toContain("secret-name");
      const shown = await refused(store.create("bob", "b2", parent).then(unwrap));
      expect(shown.details).toMatchObject({ projectId: bobs.id, relation: "contains", workspaceRoot: root });
      expect(shown.message).toContain(root);
    } finally {
      await db.end();
    }
  });
});

describe("an overlap left by an earlier version", () => {
  it("is reported at start and in host.status, and every tool call in either project is refused", async () => {
    const outerRoot = stack.newWorkspace("legacy-outer");
    const innerRoot = path.join(outerRoot, "legacy-inner");
    mkdirSync(innerRoot);
    writeFileSync(path.join(innerRoot, "notes.txt"), "inner\n");
    const outer = await create(outerRoot);
    // What an earlier version would have accepted: the inner row written beside the outer one.
    await stack.db.pool.query(
      `INSERT INTO projects (id, name, workspace_root, owner, created_at) VALUES ('prj_legacy_inner', 'inner', $1, 'bob', now())`,
      [innerRoot],
    );
    // As the members migration would have left it: its creator a member; alice one too, so her
    // sessions there can try the tools.
    await stack.db.pool.query(
      `INSERT INTO project_members (project_id, principal, added_by, added_at)
       VALUES ('prj_legacy_inner', 'bob', NULL, now()), ('prj_legacy_inner', 'alice', 'bob', now())`,
    );
    await stack.host!.stop();
    const host = await stack.startHost();
    const report = await host.waitForEvent("host.project_overlaps");
    expect(report).toMatchObject({ level: "warn" });
    const pairs = (report.pairs as Array<Array<{ projectId: string; workspaceRoot: string }>>).map((p) =>
      p.map((x) => x.projectId).sort(),
    );
    expect(pairs).toContainEqual([outer.id, "prj_legacy_inner"].sort());

    const status = await stack.client("alice").call("host.status", {});
    const pair = status.projectOverlaps.find((o) => o.projects.some((p) => p.projectId === outer.id));
    expect(pair?.projects.map((p) => p.projectId).sort()).toEqual([outer.id, "prj_legacy_inner"].sort());

    // The swap the outer's Bash would run, and the inner's Read that would follow it: both refused.
    const a = await turnIn(outer.id);
    const swap = await call(a, "Bash", { command: "mv legacy-inner x && ln -s /etc legacy-inner" });
    expect(swap).toMatchObject({
      isError: true,
      code: "PROJECT_ROOT_OVERLAPS",
      details: { projectIds: ["prj_legacy_inner"] },
    });
    expect(lstatSync(innerRoot).isDirectory()).toBe(true);
    const b = await turnIn("prj_legacy_inner");
    for (const [tool, args] of [
      ["Read", { path: "notes.txt" }],
      ["Write", { path: "w.txt", content: "x" }],
      ["Bash", { command: "true" }],
    ] as const) {
      const r = await call(b, tool, args);
      expect(r, tool).toMatchObject({ isError: true, code: "PROJECT_ROOT_OVERLAPS" });
    }
    expect(readFileSync(path.join(innerRoot, "notes.txt"), "utf8")).toBe("inner\n");
    const rows = await stack.db.pool.query(
      "SELECT decision, code FROM tool_calls WHERE session_id = $1 OR session_id = $2",
      [a.sessionId, b.sessionId],
    );
    expect(rows.rows.every((r) => r.decision === "deny" && r.code === "PROJECT_ROOT_OVERLAPS")).toBe(true);
  });
});
