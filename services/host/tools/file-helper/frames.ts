// The framing between the host and the file helper (both directions): a 4-byte big-endian length,
// then that many bytes of UTF-8 JSON. The length is checked against a bound before anything is
// buffered; a bad or oversized frame is a FrameError for the reader to act on, never a crash.

/** The version the helper announces in its first frame (`{ready: true, version}`); the host checks it. */
export const FILE_HELPER_PROTOCOL = 1;

/** The largest frame either side accepts (a 10 MiB preview file is ~14 MiB as base64). */
export const MAX_FRAME_BYTES = 32 * 1024 * 1024;

export class FrameError extends Error {
  override name = "FrameError";
}

/** One value as a frame; throws FrameError when its JSON is larger than `max`. */
export function encodeFrame(value: unknown, max = MAX_FRAME_BYTES): Buffer {
  const body = Buffer.from(JSON.stringify(value) ?? "null", "utf8");
  if (body.length > max) throw new FrameError(`frame of ${body.length} bytes exceeds ${max}`);
  const head = Buffer.alloc(4);
  head.writeUInt32BE(body.length, 0);
  return Buffer.concat([head, body]);
}

/**
 * Splits a byte stream into decoded frames. `push` returns the frames completed by the chunk and
 * throws FrameError on an oversized length or a body that is not JSON; after that the stream is out
 * of step and the decoder refuses every later chunk.
 */
export class FrameDecoder {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private need: number | null = null;
  private broken: FrameError | null = null;

  constructor(private readonly max = MAX_FRAME_BYTES) {}

  push(chunk: Buffer): unknown[] {
    if (this.broken) throw this.broken;
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    const out: unknown[] = [];
    for (;;) {
      if (this.need === null) {
        if (this.buffered < 4) break;
        const len = this.take(4).readUInt32BE(0);
        // Invariant: the bound is checked before the body is buffered.
        if (len > this.max) this.fail(`frame length ${len} exceeds ${this.max}`);
        this.need = len;
      }
      if (this.buffered < this.need) break;
      const body = this.take(this.need);
      this.need = null;
      try {
        out.push(JSON.parse(body.toString("utf8")));
      } catch {
        this.fail("frame body is not JSON");
      }
    }
    return out;
  }

  /** Bytes received but not yet part of a whole frame. */
  pending(): number {
    return this.buffered;
  }

  private fail(message: string): never {
    this.broken = new FrameError(message);
    this.chunks = [];
    this.buffered = 0;
    throw this.broken;
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.buffered);
    const head = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length ? [rest] : [];
    this.buffered = rest.length;
    return head;
  }
}
