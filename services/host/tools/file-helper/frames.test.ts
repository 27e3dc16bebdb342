// The framing of the file helper: whole frames in any chunking, the length bound checked before a
// body is buffered, and a bad frame an error (FrameError), never a crash or a hang.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { encodeFrame, FrameDecoder, FrameError, MAX_FRAME_BYTES } from "./frames.ts";

const json = fc.jsonValue().filter((v) => !Object.is(v, -0));

describe("frames", () => {
  it("decodes what it encodes, however the bytes are split", () => {
    fc.assert(
      fc.property(
        fc.array(json, { maxLength: 5 }),
        fc.array(fc.nat({ max: 64 }), { maxLength: 20 }),
        (values, cuts) => {
          const bytes = Buffer.concat(values.map((v) => encodeFrame(v)));
          const d = new FrameDecoder();
          const out: unknown[] = [];
          let at = 0;
          for (const c of cuts) {
            out.push(...d.push(bytes.subarray(at, Math.min(bytes.length, at + c))));
            at = Math.min(bytes.length, at + c);
          }
          out.push(...d.push(bytes.subarray(at)));
          expect(out).toEqual(values.map((v) => JSON.parse(JSON.stringify(v))));
          expect(d.pending()).toBe(0);
        },
      ),
    );
  });

  it("refuses an oversized length from the header alone, before buffering a body", () => {
    const d = new FrameDecoder(1024);
    const head = Buffer.alloc(4);
    head.writeUInt32BE(1025, 0);
    expect(() => d.push(head)).toThrow(FrameError);
    // Out of step from then on: every later chunk is refused too.
    expect(() => d.push(encodeFrame({ ok: true }))).toThrow(FrameError);
    const big = Buffer.alloc(4);
    big.writeUInt32BE(0xffffffff, 0);
    expect(() => new FrameDecoder().push(big)).toThrow(/exceeds/);
  });

  it("refuses a body that is not JSON", () => {
    const body = Buffer.from("{not json", "utf8");
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length, 0);
    expect(() => new FrameDecoder().push(Buffer.concat([head, body]))).toThrow(/not JSON/);
  });

  it("any byte string is frames or a FrameError, nothing else", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        const d = new FrameDecoder(64);
        try {
          d.push(Buffer.from(bytes));
        } catch (err) {
          expect(err).toBeInstanceOf(FrameError);
        }
      }),
    );
  });

  it("will not encode a frame above the bound", () => {
    expect(() => encodeFrame("x".repeat(100), 50)).toThrow(FrameError);
    expect(MAX_FRAME_BYTES).toBe(32 * 1024 * 1024);
  });
});
