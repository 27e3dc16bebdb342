// The sealed plan folder: what the host creates (0755, its own, no ACL even under a default ACL),
// what it refuses (links, foreign owners, group/other write, ACL write entries, default ACLs) with
// the reason and without repairing anything, and file access through the folder's handle only.
import { execFileSync } from "node:child_process";
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { AppError } from "../../protocol/app-error.ts";
import { openPlanDir, sealedPiDir } from "./plan-dir.ts";
import { tempDirs } from "./temp-dirs.test-support.ts";

const SANDBOX_USER = process.env.PI_SANDBOX_USER || "pihost-sandbox";
const [, , sbUid, sbGid] = execFileSync("getent", ["passwd", SANDBOX_USER], { encoding: "utf8" }).split(":");
const SB = { uid: Number(sbUid), gid: Number(sbGid) };
const OTHER_UID = 4242; // a person: neither the host nor the sandbox user

const tmp = tempDirs("plandir");

const acl = (p: string) =>
  execFileSync("getfacl", ["--numeric", "--absolute-names", "--omit-header", "--skip-base", p], {
    encoding: "utf8",
  }).trim();
const setfacl = (...args: string[]) => execFileSync("setfacl", args);
const write = { create: true, check: true } as const;

/** A workspace with `.pi/plan` made the way the host makes it. */
async function sealed(): Promise<string> {
  const ws = tmp();
  await (await openPlanDir(ws, write)).close();
  return ws;
}

async function refusal(p: Promise<unknown>): Promise<AppError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  return err as AppError;
}

/** Opening for a write is refused with the reason, and the folder's mode and ACL stay as they were. */
async function expectUnsafe(ws: string, reason: RegExp, rel = ".pi/plan") {
  const p = path.join(ws, rel);
  const before = { mode: lstatSync(p).mode, uid: lstatSync(p).uid, acl: acl(p) };
  const err = await refusal(openPlanDir(ws, write));
  expect(err.code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
  expect(String(err.details?.reason)).toMatch(reason);
  expect({ mode: lstatSync(p).mode, uid: lstatSync(p).uid, acl: acl(p) }).toEqual(before);
  const sandbox = await refusal(sealedPiDir(ws));
  expect(sandbox.code).toBe("SANDBOX_UNAVAILABLE");
  expect(sandbox.message).toMatch(reason);
}

describe("creating the plan folder", () => {
  it("makes .pi and .pi/plan the host's, 0755, with no ACL entry even under a default ACL", async () => {
    const ws = tmp();
    chownSync(ws, SB.uid, SB.gid);
    setfacl("-d", "-m", `u:${SANDBOX_USER}:rwx,g::rwx,o::rwx`, ws);
    setfacl("-m", `u:${SANDBOX_USER}:rwx`, ws);
    expect(await sealedPiDir(ws)).toBe(path.join(ws, ".pi"));
    for (const rel of [".pi", ".pi/plan"]) {
      const st = statSync(path.join(ws, rel));
      expect(st.uid).toBe(process.geteuid!());
      expect(st.mode & 0o7777).toBe(0o755);
      expect(acl(path.join(ws, rel))).toBe("");
    }
    // The workspace's own ACL is the operator's: untouched.
    expect(acl(ws)).toContain(`default:user:${SB.uid}:rwx`);
  });

  it("refuses a .pi or .pi/plan that is a symlink (or a file), writing nothing through it", async () => {
    const outside = tmp();
    const ws1 = tmp();
    symlinkSync(outside, path.join(ws1, ".pi"));
    expect((await refusal(openPlanDir(ws1, write))).code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    const ws2 = tmp();
    mkdirSync(path.join(ws2, ".pi"));
    symlinkSync(outside, path.join(ws2, ".pi", "plan"));
    const err = await refusal(openPlanDir(ws2, write));
    expect(err.details?.reason).toBe(".pi/plan is a symlink or not a folder");
    const ws3 = tmp();
    writeFileSync(path.join(ws3, ".pi"), "a file");
    expect((await refusal(openPlanDir(ws3, write))).code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    expect((await refusal(sealedPiDir(ws2))).message).toContain(".pi/plan is a symlink");
    expect(readdirSync(outside)).toEqual([]);
  });

  it("refuses a workspace root that was replaced by a symlink", async () => {
    const real = await sealed();
    const link = path.join(tmp(), "ws");
    symlinkSync(real, link);
    expect((await refusal(openPlanDir(link, write))).code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
  });
});

describe("the checks of .pi/plan", () => {
  it("another owner", async () => {
    const ws = await sealed();
    chownSync(path.join(ws, ".pi/plan"), OTHER_UID, OTHER_UID);
    await expectUnsafe(ws, /\.pi\/plan is owned by uid 4242/);
  });
  it("group or other write", async () => {
    const ws = await sealed();
    chmodSync(path.join(ws, ".pi/plan"), 0o775);
    await expectUnsafe(ws, /\.pi\/plan is writable by its group or others \(mode 0775\)/);
    chmodSync(path.join(ws, ".pi/plan"), 0o757);
    await expectUnsafe(ws, /mode 0757/);
  });
  it("an ACL entry granting write to someone but the owner", async () => {
    const ws = await sealed();
    setfacl("-m", `u:${OTHER_UID}:rwx,m::r-x`, path.join(ws, ".pi/plan"));
    await expectUnsafe(ws, new RegExp(`granting write.*user:${OTHER_UID}:rwx`));
  });
  it("a default ACL", async () => {
    const ws = await sealed();
    setfacl("-d", "-m", `u:${OTHER_UID}:r-x`, path.join(ws, ".pi/plan"));
    await expectUnsafe(ws, /\.pi\/plan has a default ACL/);
  });
  it("a read-only ACL entry is accepted", async () => {
    const ws = await sealed();
    setfacl("-m", `u:${SANDBOX_USER}:r-x`, path.join(ws, ".pi/plan"));
    await (await openPlanDir(ws, write)).close();
  });
});

describe("the checks of .pi", () => {
  it("a .pi owned by a person, 0755, is accepted; one owned by the sandbox user is refused", async () => {
    const ws = await sealed();
    chownSync(path.join(ws, ".pi"), OTHER_UID, OTHER_UID);
    await (await openPlanDir(ws, write)).close();
    expect(await sealedPiDir(ws)).toBe(path.join(ws, ".pi"));
    chownSync(path.join(ws, ".pi"), SB.uid, SB.gid);
    await expectUnsafe(ws, /\.pi is owned by the sandbox user/, ".pi");
  });
  it("group write", async () => {
    const ws = await sealed();
    chmodSync(path.join(ws, ".pi"), 0o775);
    await expectUnsafe(ws, /\.pi is writable by its group or others \(mode 0775\)/, ".pi");
    // Nothing is made inside a .pi that is not safe.
    rmSync(path.join(ws, ".pi/plan"), { recursive: true });
    expect((await refusal(openPlanDir(ws, write))).code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    expect(existsSync(path.join(ws, ".pi/plan"))).toBe(false);
  });
  it("an ACL entry for the sandbox user or its group; another person's is accepted", async () => {
    const ws = await sealed();
    const pi = path.join(ws, ".pi");
    setfacl("-m", `u:${OTHER_UID}:rwx,m::r-x`, pi);
    await (await openPlanDir(ws, write)).close();
    setfacl("-m", `u:${SANDBOX_USER}:rwx,m::r-x`, pi);
    await expectUnsafe(ws, new RegExp(`granting the sandbox user .* write \\(user:${SB.uid}:rwx\\)`), ".pi");
    setfacl("-b", pi);
    setfacl("-m", `g:${SB.gid}:rwx,m::r-x`, pi);
    await expectUnsafe(ws, new RegExp(`group:${SB.gid}:rwx`), ".pi");
  });
});

describe("files through the folder's handle", () => {
  it("creates exclusively, 0444, lists only regular .md files, refuses odd names", async () => {
    const ws = tmp();
    const dir = await openPlanDir(ws, write);
    try {
      expect(await dir.createFile("a.md", Buffer.from("one"))).toBe(true);
      expect(await dir.createFile("a.md", Buffer.from("two"))).toBe(false);
      expect(statSync(path.join(ws, ".pi/plan/a.md")).mode & 0o777).toBe(0o444);
      expect((await dir.readFile("a.md", 100)).toString()).toBe("one");
      mkdirSync(path.join(ws, ".pi/plan/dir.md"));
      symlinkSync("/etc/passwd", path.join(ws, ".pi/plan/link.md"));
      writeFileSync(path.join(ws, ".pi/plan/notes.txt"), "x");
      expect(await dir.listMarkdown()).toEqual(["a.md"]);
      for (const bad of ["../x.md", "..", "a/b.md", ""])
        expect((await refusal(dir.readFile(bad, 100))).code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
      expect((await refusal(dir.createFile("../escape.md", Buffer.from("x")))).code).toBe(
        "PLAN_ARTIFACT_PATH_UNSAFE",
      );
      expect(existsSync(path.join(ws, ".pi/escape.md"))).toBe(false);
    } finally {
      await dir.close();
    }
  });

  it("a read refuses a symlink, a folder, a FIFO (without blocking) and a huge file; missing is FILE_NOT_FOUND", async () => {
    const ws = await sealed();
    const plan = path.join(ws, ".pi/plan");
    symlinkSync("/etc/passwd", path.join(plan, "link.md"));
    mkdirSync(path.join(plan, "dir.md"));
    execFileSync("mkfifo", [path.join(plan, "fifo.md")]);
    writeFileSync(path.join(plan, "big.md"), "x".repeat(101));
    const dir = await openPlanDir(ws, { create: false, check: false });
    try {
      const link = await refusal(dir.readFile("link.md", 100));
      expect([link.code, link.details?.reason]).toEqual([
        "PLAN_ARTIFACT_PATH_UNSAFE",
        ".pi/plan/link.md is a symlink",
      ]);
      expect((await refusal(dir.readFile("dir.md", 100))).code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
      expect((await refusal(dir.readFile("fifo.md", 100))).code).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
      expect((await refusal(dir.readFile("big.md", 100))).code).toBe("FILE_NOT_READABLE");
      expect((await refusal(dir.readFile("gone.md", 100))).code).toBe("FILE_NOT_FOUND");
    } finally {
      await dir.close();
    }
  });

  it("reading never creates: a missing folder is FILE_NOT_FOUND, a linked one PLAN_ARTIFACT_PATH_UNSAFE", async () => {
    const ws = tmp();
    expect((await refusal(openPlanDir(ws, { create: false, check: false }))).code).toBe("FILE_NOT_FOUND");
    expect(existsSync(path.join(ws, ".pi"))).toBe(false);
    symlinkSync(await sealed(), path.join(ws, ".pi"));
    expect((await refusal(openPlanDir(ws, { create: false, check: false }))).code).toBe(
      "PLAN_ARTIFACT_PATH_UNSAFE",
    );
  });
});
