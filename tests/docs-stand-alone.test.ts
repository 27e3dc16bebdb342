// The project's docs stand alone: code comments, tests and docs cite docs/ and files in the
// repository, never a design document, decision record or note kept outside it.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

/** What a citation of a document outside the repository looks like. */
const OUTSIDE = /DESIGN §|DESIGN section|ADR \d{4}|STACK-NOTES|CONVENTIONS\.md|\.\.\/shared\//;

describe("docs stand alone", () => {
  it("no tracked file cites a document outside the repository", () => {
    const files = execFileSync("git", ["ls-files"], { encoding: "utf8" })
      .split("\n")
      .filter(
        (f) => f !== "" && f !== "tests/docs-stand-alone.test.ts" && !/\.(png|svg|ico|woff2?)$|lock/.test(f),
      );
    const citing = files.flatMap((f) =>
      readFileSync(f, "utf8")
        .split("\n")
        .flatMap((line, i) => (OUTSIDE.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(citing).toEqual([]);
  });
});
