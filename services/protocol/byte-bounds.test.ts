import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ToolExecuteResult } from "./schemas.ts";
import { boundToolResult, jsonBytes, prefixWithinBytes, splitWithinBytes } from "./byte-bounds.ts";

const result = (text: string, details?: Record<string, unknown>): ToolExecuteResult => ({
  content: [{ type: "text", text }],
  isError: false,
  ...(details ? { details } : {}),
});

describe("prefixWithinBytes", () => {
  it("counts bytes after JSON encoding, never splits a surrogate pair", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary" }), fc.nat(2000), (s, budget) => {
        const n = prefixWithinBytes(s, budget);
        const prefix = s.slice(0, n);
        expect(Buffer.byteLength(JSON.stringify(prefix)) - 2).toBeLessThanOrEqual(budget);
        // Maximal: one more character (or pair) would not fit.
        if (n < s.length) {
          const code = s.charCodeAt(n);
          const step =
            code >= 0xd800 &&
            code <= 0xdbff &&
            n + 1 < s.length &&
            s.charCodeAt(n + 1) >= 0xdc00 &&
            s.charCodeAt(n + 1) <= 0xdfff
              ? 2
              : 1;
          expect(Buffer.byteLength(JSON.stringify(s.slice(0, n + step))) - 2).toBeGreaterThan(budget);
        }
      }),
    );
  });
});

describe("boundToolResult", () => {
  it("leaves a result within the bound alone", () => {
    const r = result("hello", { exitCode: 0 });
    expect(boundToolResult(r, 1024)).toBe(r);
  });

  it("200 KiB of control characters (about 1.2 MiB encoded) fits 256 KiB with a marker and the full size", () => {
    const text = "\u0001".repeat(200 * 1024);
    const r = boundToolResult(result(text, { exitCode: 0 }), 256 * 1024);
    expect(jsonBytes(r)).toBeLessThanOrEqual(256 * 1024);
    expect(r.content[0]!.text).toMatch(
      /\[output truncated by the host: \d+ of 204800 characters shown, \d+ bytes in full\]$/,
    );
    expect(r.details).toMatchObject({
      exitCode: 0,
      truncated: { fullBytes: jsonBytes(result(text, { exitCode: 0 })), fullTextChars: 204800 },
    });
  });

  it("any content and details end within the bound", () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: "binary", maxLength: 3000 }), { minLength: 1, maxLength: 4 }),
        fc.dictionary(
          fc.string({ maxLength: 8 }),
          fc.oneof(fc.string({ unit: "binary", maxLength: 3000 }), fc.integer()),
        ),
        fc.integer({ min: 4096, max: 20_000 }),
        (texts, details, max) => {
          const r: ToolExecuteResult = {
            content: texts.map((text) => ({ type: "text", text })),
            isError: true,
            details,
          };
          expect(jsonBytes(boundToolResult(r, max))).toBeLessThanOrEqual(max);
        },
      ),
    );
  });
});

describe("splitWithinBytes", () => {
  it("joins back to the same text, each part within its budget, no surrogate pair split", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 5000 }),
        fc.integer({ min: 8, max: 700 }),
        (s, budget) => {
          const parts = splitWithinBytes(s, budget);
          expect(parts.join("")).toBe(s);
          let at = 0;
          for (const p of parts) {
            expect(Buffer.byteLength(JSON.stringify(p)) - 2).toBeLessThanOrEqual(budget);
            at += p.length;
            // A cut never falls between a high and a low surrogate.
            const before = s.charCodeAt(at - 1);
            const after = s.charCodeAt(at);
            expect(before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff).toBe(false);
          }
        },
      ),
    );
  });
});
