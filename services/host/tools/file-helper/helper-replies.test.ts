// The host's checks of the untrusted helper's replies: a result is a clean ToolExecuteResult (never
// one that changes the mode or ends the turn), an error code outside the file tools' codes is
// TOOL_FAILED, messages and details are bounded, and anything malformed is refused (null).
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { checkResult, helperError } from "./helper-replies.ts";

describe("checkResult", () => {
  it("keeps a file tool's result and drops next and terminate", () => {
    const r = checkResult("tool", {
      content: [{ type: "text", text: "hi" }],
      isError: false,
      details: { path: "a" },
      terminate: true,
      next: { mode: "agent", systemPrompt: "x", tools: [] },
    });
    expect(r).toEqual({ content: [{ type: "text", text: "hi" }], isError: false, details: { path: "a" } });
  });

  it("refuses malformed replies of every op", () => {
    expect(checkResult("tool", { content: "x", isError: false })).toBeNull();
    expect(checkResult("previewFile", { rel: "/etc/shadow", base64: "" })).toBeNull();
    expect(checkResult("previewFile", { rel: "../x", base64: "" })).toBeNull();
    expect(checkResult("previewFile", { rel: "a", base64: "not base64!" })).toBeNull();
    expect(checkResult("listPlanFiles", { names: ["../x.md"] })).toBeNull();
    expect(checkResult("listPlanFiles", { names: Array(10_001).fill("a.md") })).toBeNull();
    expect(checkResult("listPlanFiles", { names: ["a.md"] })).toEqual({ names: ["a.md"] });
  });

  it("any value is a checked result or null, never an exception", () => {
    fc.assert(
      fc.property(
        fc.constantFrom("tool", "previewFile", "listPlanFiles" as const),
        fc.anything(),
        (op, v) => {
          expect(() => checkResult(op, v)).not.toThrow();
        },
      ),
    );
  });
});

describe("helperError", () => {
  it("passes the file tools' codes, bounds the message and maps every other code to TOOL_FAILED", () => {
    expect(helperError({ code: "FILE_NOT_READABLE", message: "no" }).code).toBe("FILE_NOT_READABLE");
    for (const code of ["TURN_TOKEN_INVALID", "PLAN_ARTIFACT_HASH_MISMATCH", "NOT_A_CODE", 7])
      expect(helperError({ code, message: "x" }).code).toBe("TOOL_FAILED");
    expect(
      helperError({ code: "TOOL_FAILED", message: "m".repeat(10_000) }).message.length,
    ).toBeLessThanOrEqual(2000);
    expect(
      helperError({ code: "TOOL_FAILED", details: { big: "d".repeat(100_000) } }).details,
    ).toBeUndefined();
    fc.assert(
      fc.property(fc.anything(), (v) => {
        expect(helperError(v).code).toBeTypeOf("string");
      }),
    );
  });
});
