// Test support of the decodeParams property tests: an independent description of a schema's top
// level, the decoder run as a property, and the fast-check arbitraries (valid, invalid, anything).
import { sanitizeText } from "./text-safety.ts";
import fc from "fast-check";
import type { TSchema } from "typebox";
import { Check } from "typebox/value";
import { expect } from "vitest";
import { AppError } from "./app-error.ts";
import { decodeParams } from "./decode.ts";

export const ID = /^[A-Za-z0-9_-]{1,64}$/;

// ---- an independent description of each schema's top level ------------------------------------

export type Field =
  | { kind: "id" }
  | { kind: "string"; min: number; max: number }
  | { kind: "int" }
  | { kind: "enum"; values: readonly string[] }
  | { kind: "object" }
  | { kind: "array"; min: number; max: number };

export interface Case {
  name: string;
  schema: TSchema;
  fields: Record<string, Field>;
  required: string[];
  valid: fc.Arbitrary<Record<string, unknown>>;
  examples: Record<string, unknown>[];
}

export const codePoints = (s: string) => [...s].length;

/** Checks what the schema promises at the top level without TypeBox, so acceptance is cross-checked. */
export function matchesSpec(value: unknown, c: Case): boolean {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const own = Reflect.ownKeys(value).filter((k) => typeof k === "string");
  if (!own.every((k) => Object.hasOwn(c.fields, k))) return false;
  if (!c.required.every((k) => Object.hasOwn(value, k))) return false;
  const v = value as Record<string, unknown>;
  return Object.entries(c.fields).every(([key, f]) => {
    if (!Object.hasOwn(v, key) || v[key] === undefined) return !c.required.includes(key);
    const x = v[key];
    switch (f.kind) {
      case "id":
        return typeof x === "string" && ID.test(x);
      case "string":
        return typeof x === "string" && codePoints(x) >= f.min && codePoints(x) <= f.max;
      case "int":
        return typeof x === "number" && Number.isInteger(x) && x >= 0;
      case "enum":
        return typeof x === "string" && f.values.includes(x);
      case "object":
        return typeof x === "object" && x !== null && !Array.isArray(x);
      case "array":
        return Array.isArray(x) && x.length >= f.min && x.length <= f.max;
    }
    return false;
  });
}

export type Outcome = { accepted: true; value: unknown } | { accepted: false; error: AppError };

/** Runs the decoder; anything but success or INVALID_PARAMS fails the property. */
export function decode(schema: TSchema, value: unknown): Outcome {
  try {
    return { accepted: true, value: decodeParams(schema, value) };
  } catch (err) {
    if (!(err instanceof AppError))
      throw new Error("decodeParams threw something other than AppError", { cause: err });
    if (err.code !== "INVALID_PARAMS") throw new Error(`decodeParams threw ${err.code}`, { cause: err });
    const wire = err.toWire();
    if (wire.retriable !== false || typeof wire.message !== "string")
      throw new Error("malformed INVALID_PARAMS reply");
    const problems = err.details?.problems;
    if (!Array.isArray(problems) || problems.length === 0 || problems.length > 5) {
      throw new Error("INVALID_PARAMS without details.problems");
    }
    JSON.stringify(wire); // the reply must be encodable
    return { accepted: false, error: err };
  }
}

/** The property every input must satisfy. */
export function acceptedAndMatchingOrInvalid(c: Case, value: unknown): void {
  const out = decode(c.schema, value);
  if (out.accepted) {
    expect(out.value).toBe(value); // no coercion: the caller gets exactly what was checked
    expect(Check(c.schema, out.value)).toBe(true);
    expect(matchesSpec(out.value, c)).toBe(true);
  }
}

export function expectInvalid(c: Case, value: unknown): void {
  const out = decode(c.schema, value);
  if (out.accepted) throw new Error(`${c.name} accepted ${safeShow(value)}`);
}

export function safeShow(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 300) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

// ---- arbitraries -------------------------------------------------------------------------------

export const idArb = fc.stringMatching(ID);
/** Any text Postgres can store (a NUL or lone surrogate is refused by decodeParams: text-safety.ts). */
export const str = (minLength: number, maxLength: number) =>
  fc.string({ minLength, maxLength, unit: "binary" }).map((s) => sanitizeText(s).value);
export const jsonObject = fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 });

/** Ids a subject token or a pattern must never let through: dots, '>', '*', spaces, newlines, length. */
export const badIdArb = fc.oneof(
  fc
    .tuple(idArb, fc.constantFrom(".", ">", "*", " ", "\t", "\n", "/", "é", "\u0000", "$"), fc.nat())
    .map(([id, bad, at]) => {
      const i = at % (id.length + 1);
      return id.slice(0, i) + bad + id.slice(i);
    }),
  fc.constantFrom("", " ", ".", ">", "a.b", "a b", "abc\n", " abc", "s1.>", "*"),
  fc.stringMatching(/^[A-Za-z0-9_-]{65,80}$/),
);

export const permissionModes = ["inherit", "ask", "accept-edits", "auto"] as const;

export const scriptStepArb = fc.record(
  {
    text: fc.string(),
    toolCalls: fc.array(fc.record({ name: str(1, 20), args: jsonObject }), { maxLength: 16 }),
    waitForFile: str(1, 40),
  },
  { requiredKeys: [] },
);

export const modelArb = fc.record(
  {
    provider: str(1, 64),
    model: str(1, 128),
    script: fc.array(scriptStepArb, { maxLength: 4 }),
  },
  { requiredKeys: ["provider", "model"] },
);

export function wrongTypeArb(f: Field): fc.Arbitrary<unknown> {
  const notString = fc.oneof(
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.jsonValue({ maxDepth: 2 }), { maxLength: 3 }),
    jsonObject,
  );
  switch (f.kind) {
    case "id":
    case "string":
    case "enum":
      return notString;
    case "int":
      return fc.oneof(
        fc.string(),
        fc.double({ noInteger: true }),
        fc.integer({ max: -1 }),
        fc.boolean(),
        fc.constant(null),
        jsonObject,
      );
    case "object":
      return fc.oneof(
        fc.string(),
        fc.integer(),
        fc.boolean(),
        fc.constant(null),
        fc.array(fc.jsonValue(), { maxLength: 3 }),
      );
    case "array":
      return fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), jsonObject);
  }
}

/** Values of the right type that break the field's limits (length, pattern, enum); null if none. */
export function outOfRangeArb(f: Field): fc.Arbitrary<unknown> | null {
  switch (f.kind) {
    case "id":
      return badIdArb;
    case "string": {
      const over = fc.nat(20).map((n) => "a".repeat(f.max + 1 + n));
      return f.min > 0 ? fc.oneof(over, fc.constant("")) : over;
    }
    case "int":
      return fc.oneof(fc.integer({ max: -1 }), fc.constantFrom(0.5, -0.5, Number.NaN, Infinity));
    case "enum":
      return fc.string().filter((s) => !f.values.includes(s));
    case "array":
      return f.min > 0 ? fc.constant([]) : null;
    case "object":
      return null;
  }
}

export function withOwnKey(
  obj: Record<string, unknown>,
  key: string,
  value: unknown,
): Record<string, unknown> {
  const copy = { ...obj };
  // defineProperty, so '__proto__' becomes an own key as JSON.parse would make it
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** A valid object with one definite defect: each result must be refused. */
export function definitelyInvalidArb(c: Case): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(c.fields);
  const extraKey = fc.oneof(
    fc.string().filter((k) => !keys.includes(k)),
    fc.constantFrom("__proto__", "constructor", "toString", "", " sessionId", "sessionid"),
  );
  const variants: fc.Arbitrary<Record<string, unknown>>[] = [
    fc
      .tuple(c.valid, extraKey, fc.jsonValue({ maxDepth: 2 }))
      .filter(([, key]) => !keys.includes(key))
      .map(([v, key, x]) => withOwnKey(v, key, x)),
    fc.tuple(c.valid, fc.constantFrom(...c.required)).map(([v, key]) => {
      const copy = { ...v };
      delete copy[key];
      return copy;
    }),
  ];
  for (const [key, field] of Object.entries(c.fields)) {
    variants.push(fc.tuple(c.valid, wrongTypeArb(field)).map(([v, x]) => withOwnKey(v, key, x)));
    const bad = outOfRangeArb(field);
    if (bad) variants.push(fc.tuple(c.valid, bad).map(([v, x]) => withOwnKey(v, key, x)));
  }
  return fc.oneof(...variants);
}

export const anythingArb = fc.anything({
  maxDepth: 3,
  withBoxedValues: true,
  withMap: true,
  withSet: true,
  withObjectString: true,
  withNullPrototype: true,
  withBigInt: true,
  withDate: true,
  withTypedArray: true,
  withSparseArray: true,
  stringUnit: "binary",
});

// ---- properties --------------------------------------------------------------------------------
