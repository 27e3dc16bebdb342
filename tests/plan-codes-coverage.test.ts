// Meta-test: every PLAN_* code of the registry is asserted by at least one integration test in
// tests/ (as a reply code, or as the code recorded on a row or event). A new PLAN_* code without an
// integration test that expects it fails here.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "../services/protocol/error-codes.ts";
import { REPO_ROOT } from "./support/processes.ts";

const self = path.basename(import.meta.filename);
const testsDir = path.join(REPO_ROOT, "tests");
const sources = readdirSync(testsDir)
  .filter(
    (f) =>
      f.endsWith(".test.ts") && f !== self && !["error-registry.test.ts", "protocol-doc.test.ts"].includes(f),
  )
  .map((f) => readFileSync(path.join(testsDir, f), "utf8"));

describe("PLAN_* codes", () => {
  it("each is expected by at least one integration test", () => {
    const planCodes = Object.values(ErrorCode).filter((c) => c.startsWith("PLAN_"));
    expect(planCodes.length).toBeGreaterThan(20);
    const unasserted = planCodes.filter(
      (code) => !sources.some((src) => new RegExp(`["'\`]${code}["'\`]`).test(src)),
    );
    expect(unasserted).toEqual([]);
  });
});
