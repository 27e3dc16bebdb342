// A workspace the sandbox user cannot use (issue #10 clause 6), as a new person's `mktemp -d` makes
// it: 0700 and owned by root. With PI_SANDBOX_GRANT_ACL off projects.create refuses it with
// WORKSPACE_NOT_USABLE naming the fix and writes no row; on, it grants through ACLs that follow no
// symlink and skip `.pi`, so Bash and Edit work on files root wrote before; git trusts the workspace.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { checkSandboxAccess, grantSandboxAccess } from "../services/host/tools/workspace-access.ts";
import { AppError } from "../services/protocol/app-error.ts";
import { agentTurnIn, openStackDir, SANDBOX_USER, toolCaller } from "./support/sandbox.ts";
import type { Stack } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";

const settings = { user: SANDBOX_USER };
/** The ACL of each path, symlinks not followed (getfacl -P), header lines kept. */
const acl = (...paths: string[]) =>
  execFileSync("getfacl", ["-P", "-p", "--", ...paths], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "ignore"],
  });

/** What `WS=$(mktemp -d)` gives a new person on a host running as root: 0700, root-owned (in a
 * private 0700 TMPDIR, so the folder above needs search too). */
function mktempWorkspace(stack: Stack, name: string, parentMode = 0o700): string {
  const parent = path.join(stack.dir, name);
  mkdirSync(parent, { recursive: true });
  chmodSync(parent, parentMode);
  const ws = mkdtempSync(path.join(parent, "tmp."));
  chmodSync(ws, 0o700);
  return ws;
}

/** The refusal of a grant that must not succeed. */
const refused = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error("the grant succeeded");
    },
    (e: unknown) => e as AppError,
  );

const create = (stack: Stack, root: string) =>
  stack.client("alice").call("projects.create", { name: "ws", workspaceRoot: root });

describe("with PI_SANDBOX_GRANT_ACL off", () => {
  const stack = useStack("wsaccess_off", {
    extra: { PI_SANDBOX_GRANT_ACL: "0" },
    prepare: openStackDir,
    host: true,
  });

  it("a mktemp -d workspace is WORKSPACE_NOT_USABLE naming the fix, and no row is written", async () => {
    const ws = mktempWorkspace(stack, "off", 0o1777); // as in /tmp
    const before = await stack.db.pool.query("SELECT count(*)::int AS n FROM projects");
    const err = await create(stack, ws).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.code).toBe("WORKSPACE_NOT_USABLE");
    expect(e.message).toContain(`cannot enter (search) ${ws},`);
    expect(e.message).toContain("PI_SANDBOX_GRANT_ACL=1");
    expect(e.message).toContain(`setfacl -m u:${SANDBOX_USER}:rwX`);
    expect(e.details).toMatchObject({ path: ws, missing: "enter", user: SANDBOX_USER });
    const after = await stack.db.pool.query("SELECT count(*)::int AS n FROM projects");
    expect(after.rows[0].n).toBe(before.rows[0].n);
    expect(acl(ws)).not.toContain(`user:${SANDBOX_USER}`);
  });
});

describe("with PI_SANDBOX_GRANT_ACL on", () => {
  const stack = useStack("wsaccess_on", {
    extra: { PI_TURN_LEASE_MS: String(3600_000) },
    prepare: openStackDir,
    host: true,
  });

  const turnIn = (projectId: string) => agentTurnIn(stack, projectId);
  const call = toolCaller(stack);

  it("grants through ACLs: Bash touch and Edit of a root-written file work; .pi and /etc get nothing", async () => {
    const ws = mktempWorkspace(stack, "on");
    writeFileSync(path.join(ws, "existing.txt"), "written by root\n", { mode: 0o600 });
    mkdirSync(path.join(ws, "src"));
    writeFileSync(path.join(ws, "src", "deep.txt"), "deep\n", { mode: 0o644 });
    mkdirSync(path.join(ws, ".pi", "plan"), { recursive: true });
    writeFileSync(path.join(ws, ".pi", "settings.json"), "{}\n");
    symlinkSync("/etc", path.join(ws, "etc-link"));
    symlinkSync("/etc/shadow", path.join(ws, "src", "shadow-link"));
    const etcBefore = acl("/etc", "/etc/shadow", "/etc/passwd");
    expect((await checkSandboxAccess(ws, settings)).ok).toBe(false);

    const project = await create(stack, ws);
    expect(project.workspaceRoot).toBe(ws);
    expect(await checkSandboxAccess(ws, settings)).toEqual({ ok: true });
    const audit = await stack.db.pool.query(
      "SELECT details FROM audit_log WHERE action = 'project.create' AND details->>'projectId' = $1",
      [project.id],
    );
    expect(audit.rows[0].details.aclGranted).toMatchObject({ searchOnly: [path.dirname(ws)] });

    const a = await turnIn(project.id);
    const touch = await call(a, "Bash", { command: "touch new.txt && echo more >> existing.txt && id -un" });
    expect(touch, JSON.stringify(touch)).toMatchObject({ isError: false });
    expect(String(touch.details?.stdout)).toContain(SANDBOX_USER);
    const edit = await call(a, "Edit", { path: "src/deep.txt", oldText: "deep", newText: "edited" });
    expect(edit, JSON.stringify(edit)).toMatchObject({ isError: false });
    expect(readFileSync(path.join(ws, "src", "deep.txt"), "utf8")).toBe("edited\n");
    expect(readFileSync(path.join(ws, "existing.txt"), "utf8")).toBe("written by root\nmore\n");

    // Nothing under .pi, nothing through either link.
    const pi = acl(path.join(ws, ".pi"), path.join(ws, ".pi", "plan"), path.join(ws, ".pi", "settings.json"));
    expect(pi).not.toContain(`user:${SANDBOX_USER}`);
    expect(acl("/etc", "/etc/shadow", "/etc/passwd")).toBe(etcBefore);
    const leak = await call(a, "Bash", { command: "cat src/shadow-link" });
    expect(leak).toMatchObject({ isError: true });
  });

  it("git status works in a repository created and owned by root (safe.directory)", async () => {
    const ws = mktempWorkspace(stack, "git");
    execFileSync("git", ["init", "-q", ws]);
    writeFileSync(path.join(ws, "tracked.txt"), "x\n");
    const project = await create(stack, ws);
    const a = await turnIn(project.id);
    expect(statSync(path.join(ws, ".git")).uid).toBe(0);
    const r = await call(a, "Bash", { command: "git status --porcelain=v1 --branch" });
    expect(r, JSON.stringify(r)).toMatchObject({ isError: false });
    expect(String(r.details?.stdout)).toMatch(/^## /m);
    expect(String(r.details?.stdout)).toContain("?? tracked.txt");
  });

  it("a workspace closed again after create: Bash's result text carries bwrap's real reason", async () => {
    const ws = mktempWorkspace(stack, "closed");
    const project = await create(stack, ws);
    execFileSync("setfacl", ["-b", ws]);
    chmodSync(ws, 0o700);
    const a = await turnIn(project.id);
    const r = await call(a, "Bash", { command: "echo ran" });
    expect(r).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE" });
    const text = r.content.map((c) => ("text" in c ? c.text : "")).join("");
    expect(text).toContain(ws);
    expect(text).toMatch(/Permission denied/i);
  });

  it("a tree over the bound changes nothing; a root reached through a symlink is refused", async () => {
    const ws = mktempWorkspace(stack, "big");
    for (let i = 0; i < 5; i++) writeFileSync(path.join(ws, `f${i}`), "x");
    const err = await refused(grantSandboxAccess(ws, stack.dir, settings, { maxEntries: 4 }));
    expect(err).toMatchObject({ code: "WORKSPACE_NOT_USABLE", details: { maxEntries: 4 } });
    expect(err.message).toContain("more than 4 entries");
    expect(acl(ws, path.join(ws, "f0"), path.dirname(ws))).not.toContain(`user:${SANDBOX_USER}`);

    const real = mktempWorkspace(stack, "real");
    const link = path.join(stack.dir, "link");
    symlinkSync(path.dirname(real), link);
    const viaLink = path.join(link, path.basename(real));
    const linked = await refused(grantSandboxAccess(viaLink, stack.dir, settings));
    expect(linked).toMatchObject({ code: "WORKSPACE_NOT_USABLE" });
    expect(acl(real, path.dirname(real))).not.toContain(`user:${SANDBOX_USER}`);
    const outside = await refused(grantSandboxAccess("/etc", stack.dir, settings));
    expect(outside).toMatchObject({ code: "WORKSPACE_NOT_ALLOWED" });
  });
});
