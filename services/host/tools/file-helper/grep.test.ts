// Grep's ripgrep arguments: never -P, links not followed, no config file, the pattern as
// --regexp= and the path after --, every bound present, the deny-list as negated case-ignoring globs
// after the caller's glob (last wins), checked against ripgrep itself; and the reading of ripgrep's
// --json match lines.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DENY_NAMES, SKIP_DIRS } from "../workspace-files.ts";
import { GREP_MAX_LINE_CHARS, GREP_MAX_MATCHES, grepArgs, matchLine, runRipgrep } from "./grep.ts";

const base = { denyNames: DENY_NAMES, skipDirs: SKIP_DIRS };

describe("grepArgs", () => {
  it("has every bound and safety flag, and never -P", () => {
    const a = grepArgs({ ...base, pattern: "x", rel: "" });
    for (const flag of ["--json", "--no-config", "--no-follow", "--max-columns-preview"])
      expect(a).toContain(flag);
    for (const prefix of ["--max-filesize=", "--max-columns=", "--regex-size-limit=", "--dfa-size-limit="])
      expect(a.some((x) => x.startsWith(prefix))).toBe(true);
    expect(a).toContain(`--max-count=${GREP_MAX_MATCHES}`);
    expect(a.some((x) => x === "-P" || x.startsWith("--pcre2") || x === "--engine=pcre2")).toBe(false);
    expect(a.some((x) => x === "-L" || x === "--follow")).toBe(false);
    expect(a.slice(-2)).toEqual(["--", "."]);
  });

  it("a pattern or path that looks like a flag stays a pattern and a path", () => {
    const a = grepArgs({ ...base, pattern: "--pre=/bin/sh", rel: "-rf" });
    expect(a).toContain("--regexp=--pre=/bin/sh");
    expect(a).not.toContain("--pre=/bin/sh");
    expect(a.indexOf("--")).toBe(a.length - 2);
    expect(a.at(-1)).toBe("-rf");
  });

  it("every deny-list name and skipped folder is a negated case-ignoring glob after the caller's glob", () => {
    const a = grepArgs({ ...base, pattern: "x", rel: "sub", glob: "*.pem" });
    const user = a.indexOf("--glob=*.pem");
    expect(user).toBeGreaterThan(-1);
    for (const n of [...DENY_NAMES, ...SKIP_DIRS]) expect(a.indexOf(`--iglob=!${n}`)).toBeGreaterThan(user);
    expect(a.filter((x) => x.startsWith("--glob=!"))).toEqual([]);
    expect(DENY_NAMES).toEqual(expect.arrayContaining([".env", "*.pem"]));
  });

  it("ripgrep itself: no spelling of a denied name is searched, whatever the caller's glob", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "grep-case-"));
    try {
      const denied = [".ENV", ".Env.local", "ID_RSA", "sub/Server.PEM", "Deploy.KEY", ".GIT/config"];
      for (const f of [...denied, "notes.txt"]) {
        mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
        writeFileSync(path.join(dir, f), "TOKEN\n");
      }
      const keep = () => true;
      for (const glob of [undefined, ".ENV", "*.PEM", "ID_*", "**/*", ".GIT/**"]) {
        const argv = grepArgs({ ...base, pattern: "TOKEN", rel: "", ...(glob ? { glob } : {}) });
        const { lines } = await runRipgrep(dir, [...argv.slice(0, -2), "--hidden", "--", "."], keep);
        const expected = glob === undefined || glob === "**/*" ? ["notes.txt:1:TOKEN"] : [];
        expect({ glob, lines }).toEqual({ glob, lines: expected });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("refuses NUL in the pattern or glob", () => {
    expect(() => grepArgs({ ...base, pattern: "a\0b", rel: "" })).toThrow(/NUL/);
    expect(() => grepArgs({ ...base, pattern: "a", rel: "", glob: "\0" })).toThrow(/NUL/);
  });
});

describe("matchLine", () => {
  it("reads a match as rel:line:text, bounded, and ignores everything else", () => {
    const m = {
      type: "match",
      data: { path: { text: "./a/b.ts" }, lines: { text: "hit\n" }, line_number: 3 },
    };
    expect(matchLine(m)).toEqual({ rel: "a/b.ts", line: "a/b.ts:3:hit" });
    const long = { ...m, data: { ...m.data, lines: { text: "y".repeat(10_000) } } };
    expect(matchLine(long)!.line.length).toBeLessThan(GREP_MAX_LINE_CHARS + 40);
    const bytes = { ...m, data: { ...m.data, lines: { bytes: Buffer.from("b\n").toString("base64") } } };
    expect(matchLine(bytes)!.line).toBe("a/b.ts:3:b");
    expect(matchLine({ type: "begin", data: { path: { text: "x" } } })).toBeNull();
    expect(
      matchLine({ type: "match", data: { path: { bytes: "AA==" }, line_number: 1 } } as never),
    ).toBeNull();
  });
});
