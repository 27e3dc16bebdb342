// Meta-test: every PLAN_* code of the registry is asserted by at least one integration test in
// tests/: inside an expect(...) chain, through an asserting helper or a constant used there (see
// tests/support/asserted-codes.ts); a comment, a title or a branch that merely names a code does not count.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ErrorCode } from "../services/protocol/error-codes.ts";
import { assertedCodes, type SourceFile } from "./support/asserted-codes.ts";
import { REPO_ROOT } from "./support/processes.ts";

const self = path.basename(import.meta.filename);
const NOT_TESTS = [self, "error-registry.test.ts", "protocol-doc.test.ts"];
const read = (dir: string, keep: (f: string) => boolean): SourceFile[] =>
  readdirSync(path.join(REPO_ROOT, dir))
    .filter(keep)
    .map((f) => ({ name: `${dir}/${f}`, text: readFileSync(path.join(REPO_ROOT, dir, f), "utf8") }));
const sources = [
  ...read("tests", (f) => f.endsWith(".test.ts") && !NOT_TESTS.includes(f)),
  ...read("tests/slow", (f) => f.endsWith(".test.ts")),
  ...read("tests/support", (f) => f.endsWith(".ts") && f !== "asserted-codes.ts"),
];

describe("PLAN_* codes", () => {
  it("each is asserted by at least one integration test", () => {
    const planCodes = Object.values(ErrorCode).filter((c) => c.startsWith("PLAN_"));
    expect(planCodes.length).toBeGreaterThan(20);
    const asserted = assertedCodes(sources, planCodes);
    expect(planCodes.filter((code) => !asserted.has(code))).toEqual([]);
  });

  it("counts an assertion, not a mention", () => {
    const codes = ["PLAN_A", "PLAN_B", "PLAN_C", "PLAN_D", "PLAN_E", "PLAN_F", "PLAN_G", "PLAN_H"];
    const text = `
      // PLAN_A in a comment, and "PLAN_A" quoted in it
      it("refuses with PLAN_B", async () => {
        if (reply.code !== "PLAN_C") retry();
        const body = { code: "PLAN_D" };
        expect(await refusalCode(p)).toBe(
          "PLAN_E",
        );
        await expect(call()).rejects.toMatchObject({ code: "PLAN_F" });
        expectCode(p, "PLAN_G");
        expect(row).toEqual({ error_code: CODE });
      });
      async function expectCode(p, code) { expect(await refusalCode(p)).toBe(code); }
      const CODE = "PLAN_H";`;
    const asserted = assertedCodes([{ name: "t.test.ts", text }], codes);
    expect([...asserted.keys()].sort()).toEqual(["PLAN_E", "PLAN_F", "PLAN_G", "PLAN_H"]);
  });
});
