// Byte bounds of what the host sends (docs/protocol.md "Bounds"): NATS refuses a message over the
// server's max_payload, and the JSON encoding of control characters is six times their length, so
// sizes are counted after encoding. A tool result over its bound keeps the start of its text with a
// visible marker and says so in `details.truncated`; transcript entries over a page are cut the
// same way. Pure.
import type { ToolExecuteResult } from "./agent-schemas.ts";

/** A string field longer than this is dropped from details that are themselves too big. */
const SHORT_STRING = 1024;
/** Room kept for the marker and the envelope around a bounded value. */
const SLACK_BYTES = 1024;

/** The bytes `s` takes inside a JSON string (UTF-8, with JSON's escapes), quotes excluded. */
function encodedCharBytes(code: number, next: number): [bytes: number, units: number] {
  if (code === 0x22 || code === 0x5c) return [2, 1];
  if (code < 0x20)
    return code === 0x0a || code === 0x0d || code === 0x09 || code === 0x08 || code === 0x0c
      ? [2, 1]
      : [6, 1];
  if (code < 0x80) return [1, 1];
  if (code < 0x800) return [2, 1];
  if (code >= 0xd800 && code <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) return [4, 2];
  // A lone surrogate is escaped as \uXXXX.
  if (code >= 0xd800 && code <= 0xdfff) return [6, 1];
  return [3, 1];
}

/** The longest prefix of `s` (in UTF-16 units, never splitting a pair) whose JSON encoding fits `budget` bytes. */
export function prefixWithinBytes(s: string, budget: number): number {
  let used = 0;
  let i = 0;
  while (i < s.length) {
    const [bytes, units] = encodedCharBytes(s.charCodeAt(i), i + 1 < s.length ? s.charCodeAt(i + 1) : 0);
    if (used + bytes > budget) break;
    used += bytes;
    i += units;
  }
  return i;
}

export const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v) ?? "");

/** Details without their long strings and nested values, marked; used when they alone are too big. */
function shortFields(details: Record<string, unknown>, mark = true): Record<string, unknown> {
  const kept: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(details)) {
    if (typeof v === "string" ? v.length <= SHORT_STRING : v === null || typeof v !== "object") kept[k] = v;
  }
  return mark ? { ...kept, detailsTruncated: true } : kept;
}

/**
 * The result as it may be sent and recorded: unchanged within `maxBytes` (encoded), else its text
 * cut to fit with a marker `[output truncated by the host: ...]` and `details.truncated`
 * `{fullBytes, shownTextChars, fullTextChars}`; details over a quarter of the bound keep only
 * their short fields.
 */
export function boundToolResult(result: ToolExecuteResult, maxBytes: number): ToolExecuteResult {
  const fullBytes = jsonBytes(result);
  if (fullBytes <= maxBytes) return result;
  let details = result.details ?? {};
  if (jsonBytes(details) > maxBytes / 4) details = shortFields(details);
  const texts = result.content.map((c) => c.text);
  const fullTextChars = texts.reduce((n, t) => n + t.length, 0);
  const skeleton: ToolExecuteResult = {
    ...result,
    content: [{ type: "text", text: "" }],
    details: { ...details, truncated: { fullBytes, shownTextChars: fullTextChars, fullTextChars } },
  };
  let budget = maxBytes - jsonBytes(skeleton) - SLACK_BYTES;
  const content: ToolExecuteResult["content"] = [];
  let shown = 0;
  for (const text of texts) {
    const n = budget > 0 ? prefixWithinBytes(text, budget) : 0;
    if (n > 0 || content.length === 0) content.push({ type: "text", text: text.slice(0, n) });
    budget -= jsonBytes(text.slice(0, n));
    shown += n;
    if (n < text.length) break;
  }
  const last = content[content.length - 1]!;
  last.text += `\n[output truncated by the host: ${shown} of ${fullTextChars} characters shown, ${fullBytes} bytes in full]`;
  return {
    ...result,
    content,
    details: { ...details, truncated: { fullBytes, shownTextChars: shown, fullTextChars } },
  };
}

/**
 * `s` cut into pieces whose JSON string encodings each take at most `budget` bytes (no surrogate
 * pair split), for what travels in parts: an oversized transcript entry, an oversized request body.
 */
export function splitWithinBytes(s: string, budget: number): string[] {
  if (budget < 8) throw new Error("a part budget must hold at least one character");
  const parts: string[] = [];
  let pos = 0;
  while (pos < s.length) {
    const rest = s.slice(pos);
    const n = prefixWithinBytes(rest, budget);
    parts.push(rest.slice(0, n));
    pos += n;
  }
  return parts.length > 0 ? parts : [""];
}
