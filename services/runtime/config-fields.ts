// Reading hand-written configuration files (a team file for `pihost nats-config`, the host's
// workspace access file): each field checked where it is read, every refusal naming the key path
// and the value it found. `fail` is the caller's (a usage error, a start-up error).
import { SUBJECT_TOKEN } from "../protocol/tokens.ts";

export type Fail = (at: string, message: string) => never;

/** A value as a refusal quotes it: JSON, at most 80 characters. */
export const show = (v: unknown): string => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

export function isMapping(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A mapping whose keys are among `keys` (null: any key). */
export function mapping(
  fail: Fail,
  at: string,
  v: unknown,
  keys: readonly string[] | null,
): Record<string, unknown> {
  const what = keys ? `a mapping with ${keys.join(", ")}` : "a mapping";
  if (!isMapping(v)) fail(at, `expected ${what}, got ${show(v)}`);
  for (const k of Object.keys(v))
    if (keys && !keys.includes(k)) fail(at ? `${at}.${k}` : k, `unknown key (allowed: ${keys.join(", ")})`);
  return v;
}

/** A list; absent or null is the empty list. */
export function list(fail: Fail, at: string, v: unknown): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(at, `expected a list, got ${show(v)}`);
  return v;
}

/** One subject token (a name that becomes part of NATS subjects). */
export function token(fail: Fail, at: string, v: unknown, what: string): string {
  if (typeof v !== "string" || !SUBJECT_TOKEN.test(v))
    fail(at, `${show(v)} is not a valid ${what} (1 to 64 of A-Z a-z 0-9 _ -)`);
  return v;
}
