import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { AppError } from "./app-error.ts";
import { decodeParams } from "./decode.ts";
import { SessionPromptParams } from "./schemas.ts";
import { sanitizeText, unsafeTextPath } from "./text-safety.ts";

describe("text Postgres refuses", () => {
  it("finds a NUL or a lone surrogate in strings and keys, anywhere, and nothing in good text", () => {
    expect(unsafeTextPath({ a: ["ok", { path: "x\u0000y" }] })).toBe("/a/1/path");
    expect(unsafeTextPath({ id: "\ud800" })).toBe("/id");
    expect(unsafeTextPath({ id: "a\udc00" })).toBe("/id");
    expect(unsafeTextPath({ "k\u0000": 1 })).toBe('/"k\\u0000"');
    expect(unsafeTextPath({ t: "emoji \ud83d\ude00, \u0001\u001f control, \ufffd" })).toBeNull();
  });

  it("decodeParams refuses it with INVALID_PARAMS naming the path", () => {
    let err: unknown;
    try {
      decodeParams(SessionPromptParams, { sessionId: "s1", text: "hi\u0000" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe("INVALID_PARAMS");
    expect((err as AppError).message).toContain("/text");
  });

  it("sanitizeText leaves nothing Postgres refuses, counts each replacement, keeps good text as it is", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string({ unit: "binary" }), (v, s) => {
        const { value, replaced } = sanitizeText({ v, s });
        expect(unsafeTextPath(value)).toBeNull();
        // Postgres' jsonb takes it: JSON.stringify then parse round-trips with no lone surrogate.
        if (replaced === 0) expect(value).toStrictEqual({ v, s });
      }),
    );
    expect(sanitizeText({ a: "x\u0000\ud800y" })).toEqual({ value: { a: "x\ufffd\ufffdy" }, replaced: 2 });
  });
});
