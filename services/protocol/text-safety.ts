// What Postgres cannot store (docs/protocol.md "Text Postgres refuses"): a NUL character and a lone
// UTF-16 surrogate in any text or JSON string. Requests are refused with INVALID_PARAMS before
// anything runs (`unsafeTextPath`, used by decodeParams for every method); output the host records
// (tool results, model text a worker appends) is repaired instead, each bad character replaced by
// U+FFFD and counted, so a tool that ran is never reported as failed.

/** A NUL, or a surrogate that is not half of a pair. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding NUL is the point
const UNSAFE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, "g");
/** How deep a value is walked; anything deeper is refused as it is by the schemas' own bounds. */
const MAX_DEPTH = 64;

/** The JSON path (`/args/path`) of the first string or key holding unsafe text, or null. */
export function unsafeTextPath(value: unknown, path = "", depth = 0): string | null {
  if (typeof value === "string") return UNSAFE.test(value) ? path || "/" : null;
  if (typeof value !== "object" || value === null || depth > MAX_DEPTH) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const p = unsafeTextPath(value[i], `${path}/${i}`, depth + 1);
      if (p) return p;
    }
    return null;
  }
  for (const [k, v] of Object.entries(value)) {
    if (UNSAFE.test(k)) return `${path}/${JSON.stringify(k)}`;
    const p = unsafeTextPath(v, `${path}/${k}`, depth + 1);
    if (p) return p;
  }
  return null;
}

/** `value` with every NUL and lone surrogate (in strings and keys) replaced by U+FFFD; `replaced` counts them. */
export function sanitizeText<T>(value: T): { value: T; replaced: number } {
  let replaced = 0;
  const fix = (s: string) =>
    UNSAFE.test(s)
      ? s.replace(UNSAFE_ALL, () => {
          replaced++;
          return "\ufffd";
        })
      : s;
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === "string") return fix(v);
    if (typeof v !== "object" || v === null || depth > MAX_DEPTH) return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[fix(k)] = walk(x, depth + 1);
    return out;
  };
  const fixed = walk(value, 0) as T;
  return { value: replaced > 0 ? fixed : value, replaced };
}
