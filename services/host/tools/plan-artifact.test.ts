// The plan artifact writer and reader: exact bytes, 0444, exclusive names with a bounded suffix,
// refusal of an unsafe `.pi` or `.pi/plan` before any file is written, and reads that refuse a
// symlinked or non-regular file with a stable code (never INTERNAL).
import { createHash } from "node:crypto";
import {
  chmodSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { type Result, unwrap } from "../../protocol/result.ts";
import {
  MAX_PLAN_BYTES,
  planSlug,
  readPlanArtifact,
  type WriteArtifactOptions,
  writePlanArtifact,
} from "./plan-artifact.ts";
import { tempDirs } from "./temp-dirs.test-support.ts";

const tmp = tempDirs("artifact");
const now = new Date("2026-11-30T07:00:00.123Z");

/** The refusal's code (the file answers its refusals as values, never by throwing). */
async function code(p: Promise<Result<unknown>>) {
  const r = await p;
  expect(r.ok).toBe(false);
  return r.ok ? null : r.refusal.code;
}

const written = async (opts: WriteArtifactOptions) => unwrap(await writePlanArtifact(opts));

describe("writePlanArtifact", () => {
  it("writes exactly the submitted bytes and reports their hash and size", async () => {
    const ws = tmp();
    const markdown = "# Plan\r\n\r\n- ünïcødé ✓\r\n- trailing spaces   \n";
    const a = await written({ workspaceRoot: ws, title: "Fix the build!", markdown, now });
    expect(a.relativePath).toBe(".pi/plan/fix-the-build-20261130-070000Z.md");
    const bytes = readFileSync(path.join(ws, a.relativePath));
    expect(bytes.equals(Buffer.from(markdown, "utf8"))).toBe(true);
    expect(a.sha256).toBe(createHash("sha256").update(bytes).digest("hex"));
    expect(a.byteSize).toBe(bytes.byteLength);
    expect(statSync(path.join(ws, a.relativePath)).mode & 0o777).toBe(0o444);
    expect(unwrap(await readPlanArtifact(ws, a.relativePath)).equals(bytes)).toBe(true);
    await a.remove();
    expect(readdirSync(path.join(ws, ".pi/plan"))).toEqual([]);
  });

  it("never replaces a file: collisions get a numeric suffix, with a bound", async () => {
    const ws = tmp();
    const first = await written({ workspaceRoot: ws, title: "x", markdown: "one", now });
    const second = await written({ workspaceRoot: ws, title: "x", markdown: "two", now });
    expect(second.relativePath).toBe(first.relativePath.replace(/\.md$/, "-2.md"));
    expect(readFileSync(path.join(ws, first.relativePath), "utf8")).toBe("one");
    for (let i = 3; i <= 50; i++) await written({ workspaceRoot: ws, title: "x", markdown: String(i), now });
    expect(await code(writePlanArtifact({ workspaceRoot: ws, title: "x", markdown: "late", now }))).toBe(
      "PLAN_ARTIFACT_COLLISION_LIMIT",
    );
  });

  it("refuses a symlinked or non-directory .pi or .pi/plan and writes nothing", async () => {
    const outside = tmp();
    const ws1 = tmp();
    symlinkSync(outside, path.join(ws1, ".pi"));
    expect(await code(writePlanArtifact({ workspaceRoot: ws1, title: "t", markdown: "m", now }))).toBe(
      "PLAN_ARTIFACT_PATH_UNSAFE",
    );
    const ws2 = tmp();
    mkdirSync(path.join(ws2, ".pi"));
    symlinkSync(outside, path.join(ws2, ".pi", "plan"));
    expect(await code(writePlanArtifact({ workspaceRoot: ws2, title: "t", markdown: "m", now }))).toBe(
      "PLAN_ARTIFACT_PATH_UNSAFE",
    );
    const ws3 = tmp();
    writeFileSync(path.join(ws3, ".pi"), "a file");
    expect(await code(writePlanArtifact({ workspaceRoot: ws3, title: "t", markdown: "m", now }))).toBe(
      "PLAN_ARTIFACT_PATH_UNSAFE",
    );
    const ws4 = tmp();
    await written({ workspaceRoot: ws4, title: "t", markdown: "m", now });
    chmodSync(path.join(ws4, ".pi/plan"), 0o777);
    expect(await code(writePlanArtifact({ workspaceRoot: ws4, title: "u", markdown: "m", now }))).toBe(
      "PLAN_ARTIFACT_PATH_UNSAFE",
    );
    expect(readdirSync(path.join(ws4, ".pi/plan"))).toHaveLength(1);
    expect(statSync(path.join(ws4, ".pi/plan")).mode & 0o777).toBe(0o777); // nothing repaired
    expect(readdirSync(outside)).toEqual([]);
  });

  it("reads refuse a symlinked, non-regular, escaping or missing artifact with a stable code", async () => {
    const ws = tmp();
    const a = await written({ workspaceRoot: ws, title: "t", markdown: "m", now });
    const file = path.join(ws, a.relativePath);
    unlinkSync(file);
    expect(await code(readPlanArtifact(ws, a.relativePath))).toBe("FILE_NOT_FOUND");
    symlinkSync("/etc/passwd", file);
    expect(await code(readPlanArtifact(ws, a.relativePath))).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    unlinkSync(file);
    mkdirSync(file);
    expect(await code(readPlanArtifact(ws, a.relativePath))).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    for (const bad of [".pi/plan/../../etc/passwd", "../x.md", ".pi/other.md", ".pi/plan/"])
      expect(await code(readPlanArtifact(ws, bad))).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    rmSync(path.join(ws, ".pi"), { recursive: true });
    symlinkSync(tmp(), path.join(ws, ".pi"));
    expect(await code(readPlanArtifact(ws, a.relativePath))).toBe("PLAN_ARTIFACT_PATH_UNSAFE");
    expect(await code(readPlanArtifact(path.join(ws, "gone"), a.relativePath))).toBe("FILE_NOT_FOUND");
  });

  it("refuses plans over 512 KiB before touching the disk", async () => {
    const ws = tmp();
    expect(
      await code(
        writePlanArtifact({ workspaceRoot: ws, title: "t", markdown: "x".repeat(MAX_PLAN_BYTES + 1), now }),
      ),
    ).toBe("PLAN_MARKDOWN_TOO_LARGE");
    expect(readdirSync(ws)).toEqual([]);
    await written({ workspaceRoot: ws, title: "t", markdown: "x".repeat(MAX_PLAN_BYTES), now });
  });

  it("slugs are ASCII with a fallback", () => {
    expect(planSlug("Über größe — 計画")).toBe("uber-groe");
    expect(planSlug("計画")).toBe("plan");
    expect(planSlug("../../etc/passwd")).toBe("etc-passwd");
    expect(planSlug("a".repeat(100))).toHaveLength(48);
  });
});
