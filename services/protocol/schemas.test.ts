// Property tests for decodeParams, the one decoder of untrusted request bodies: whatever arrives is
// either accepted as a value that matches its schema, or refused with AppError INVALID_PARAMS.
import fc from "fast-check";
import type { TSchema } from "typebox";
import { Check } from "typebox/value";
import { describe, expect, it } from "vitest";
import { AppError } from "./app-error.ts";
import {
  ClaimParams,
  decodeParams,
  PlansResolveParams,
  SessionCreateParams,
  SessionPromptParams,
  ToolsExecuteParams,
} from "./schemas.ts";

const ID = /^[A-Za-z0-9_-]{1,64}$/;

// ---- an independent description of each schema's top level ------------------------------------

type Field =
  | { kind: "id" }
  | { kind: "string"; min: number; max: number }
  | { kind: "int" }
  | { kind: "enum"; values: readonly string[] }
  | { kind: "object" }
  | { kind: "array"; min: number; max: number };

interface Case {
  name: string;
  schema: TSchema;
  fields: Record<string, Field>;
  required: string[];
  valid: fc.Arbitrary<Record<string, unknown>>;
  examples: Record<string, unknown>[];
}

const codePoints = (s: string) => [...s].length;

/** Checks what the schema promises at the top level without TypeBox, so acceptance is cross-checked. */
function matchesSpec(value: unknown, c: Case): boolean {
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

type Outcome = { accepted: true; value: unknown } | { accepted: false; error: AppError };

/** Runs the decoder; anything but success or INVALID_PARAMS fails the property. */
function decode(schema: TSchema, value: unknown): Outcome {
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
function acceptedAndMatchingOrInvalid(c: Case, value: unknown): void {
  const out = decode(c.schema, value);
  if (out.accepted) {
    expect(out.value).toBe(value); // no coercion: the caller gets exactly what was checked
    expect(Check(c.schema, out.value)).toBe(true);
    expect(matchesSpec(out.value, c)).toBe(true);
  }
}

function expectInvalid(c: Case, value: unknown): void {
  const out = decode(c.schema, value);
  if (out.accepted) throw new Error(`${c.name} accepted ${safeShow(value)}`);
}

function safeShow(value: unknown): string {
  try {
    return JSON.stringify(value)?.slice(0, 300) ?? String(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}

// ---- arbitraries -------------------------------------------------------------------------------

const idArb = fc.stringMatching(ID);
const str = (minLength: number, maxLength: number) => fc.string({ minLength, maxLength, unit: "binary" });
const jsonObject = fc.dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 });

/** Ids a subject token or a pattern must never let through: dots, '>', '*', spaces, newlines, length. */
const badIdArb = fc.oneof(
  fc
    .tuple(idArb, fc.constantFrom(".", ">", "*", " ", "\t", "\n", "/", "é", "\u0000", "$"), fc.nat())
    .map(([id, bad, at]) => {
      const i = at % (id.length + 1);
      return id.slice(0, i) + bad + id.slice(i);
    }),
  fc.constantFrom("", " ", ".", ">", "a.b", "a b", "abc\n", " abc", "s1.>", "*"),
  fc.stringMatching(/^[A-Za-z0-9_-]{65,80}$/),
);

const permissionModes = ["inherit", "ask", "accept-edits", "auto"] as const;

const scriptStepArb = fc.record(
  {
    text: fc.string(),
    toolCalls: fc.array(fc.record({ name: str(1, 20), args: jsonObject }), { maxLength: 16 }),
    waitForFile: str(1, 40),
  },
  { requiredKeys: [] },
);

const modelArb = fc.record(
  {
    provider: str(1, 64),
    model: str(1, 128),
    script: fc.array(scriptStepArb, { maxLength: 4 }),
  },
  { requiredKeys: ["provider", "model"] },
);

const CASES: Case[] = [
  {
    name: "SessionCreateParams",
    schema: SessionCreateParams,
    fields: {
      projectId: { kind: "id" },
      title: { kind: "string", min: 0, max: 200 },
      mode: { kind: "enum", values: ["agent", "plan"] },
      permissionMode: { kind: "enum", values: permissionModes },
      model: { kind: "object" },
      approvers: { kind: "array", min: 0, max: 32 },
    },
    required: ["projectId"],
    valid: fc.record(
      {
        projectId: idArb,
        title: str(0, 200),
        mode: fc.constantFrom("agent", "plan"),
        permissionMode: fc.constantFrom(...permissionModes),
        model: modelArb,
        approvers: fc.array(idArb, { maxLength: 32 }),
      },
      { requiredKeys: ["projectId"] },
    ),
    examples: [
      { projectId: "p1" },
      {
        projectId: "proj_01-A",
        title: "Refactor the parser",
        mode: "plan",
        permissionMode: "accept-edits",
        model: {
          provider: "scripted",
          model: "s1",
          script: [{ toolCalls: [{ name: "Read", args: { path: "a" } }] }],
        },
        approvers: ["bob", "carol_2"],
      },
    ],
  },
  {
    name: "SessionPromptParams",
    schema: SessionPromptParams,
    fields: {
      sessionId: { kind: "id" },
      text: { kind: "string", min: 1, max: 200_000 },
      idempotencyKey: { kind: "string", min: 1, max: 128 },
    },
    required: ["sessionId", "text"],
    valid: fc.record(
      { sessionId: idArb, text: str(1, 500), idempotencyKey: str(1, 128) },
      { requiredKeys: ["sessionId", "text"] },
    ),
    examples: [
      { sessionId: "s1", text: "hello" },
      { sessionId: "s1", text: "x".repeat(200_000), idempotencyKey: "k-1" },
      { sessionId: "s1", text: "😀".repeat(200_000) }, // the limit counts code points
    ],
  },
  {
    name: "PlansResolveParams",
    schema: PlansResolveParams,
    fields: {
      proposalId: { kind: "id" },
      sessionId: { kind: "id" },
      turnId: { kind: "id" },
      toolCallId: { kind: "string", min: 1, max: 256 },
      version: { kind: "int" },
      action: { kind: "string", min: 0, max: 64 },
      targetPermissionMode: { kind: "string", min: 0, max: 64 },
    },
    required: ["proposalId", "sessionId", "turnId", "toolCallId", "action"],
    valid: fc.record(
      {
        proposalId: idArb,
        sessionId: idArb,
        turnId: idArb,
        toolCallId: str(1, 256),
        version: fc.nat(),
        action: str(0, 64),
        targetPermissionMode: str(0, 64),
      },
      { requiredKeys: ["proposalId", "sessionId", "turnId", "toolCallId", "action"] },
    ),
    examples: [
      { proposalId: "pa1", sessionId: "s1", turnId: "t1", toolCallId: "call_1", action: "reject" },
      {
        proposalId: "pa1",
        sessionId: "s1",
        turnId: "t1",
        toolCallId: "call.1:x", // tool call ids come from the model and are not subject tokens
        version: 0,
        action: "approve",
        targetPermissionMode: "auto",
      },
      // Wrong action/mode values are the host's PLAN_* refusals, not INVALID_PARAMS.
      {
        proposalId: "pa1",
        sessionId: "s1",
        turnId: "t1",
        toolCallId: "c",
        action: "maybe",
        targetPermissionMode: "x",
      },
    ],
  },
  {
    name: "ToolsExecuteParams",
    schema: ToolsExecuteParams,
    fields: {
      sessionId: { kind: "id" },
      turnId: { kind: "id" },
      token: { kind: "string", min: 1, max: 256 },
      toolCallId: { kind: "string", min: 1, max: 256 },
      tool: { kind: "string", min: 1, max: 128 },
      args: { kind: "object" },
      batch: { kind: "array", min: 1, max: 64 },
      requestedMode: { kind: "string", min: 0, max: 32 },
    },
    required: ["sessionId", "turnId", "token", "toolCallId", "tool", "args", "batch"],
    valid: fc.record(
      {
        sessionId: idArb,
        turnId: idArb,
        token: str(1, 256),
        toolCallId: str(1, 256),
        tool: str(1, 128),
        args: jsonObject,
        batch: fc.array(fc.record({ toolCallId: str(1, 256), tool: str(1, 128) }), {
          minLength: 1,
          maxLength: 64,
        }),
        requestedMode: str(0, 32),
      },
      { requiredKeys: ["sessionId", "turnId", "token", "toolCallId", "tool", "args", "batch"] },
    ),
    examples: [
      {
        sessionId: "s1",
        turnId: "t1",
        token: "tok",
        toolCallId: "c1",
        tool: "Read",
        args: { path: "src/a.ts", offset: 0 },
        batch: [{ toolCallId: "c1", tool: "Read" }],
      },
      {
        sessionId: "s1",
        turnId: "t1",
        token: "tok",
        toolCallId: "c2",
        tool: "EnterPlanMode",
        args: {},
        batch: [{ toolCallId: "c2", tool: "EnterPlanMode" }],
        requestedMode: "plan",
      },
    ],
  },
  {
    name: "ClaimParams",
    schema: ClaimParams,
    fields: { turnId: { kind: "id" }, workerId: { kind: "id" } },
    required: ["turnId", "workerId"],
    valid: fc.record({ turnId: idArb, workerId: idArb }),
    examples: [{ turnId: "t1", workerId: "worker-7" }],
  },
];

/** Values of a type that the field can never hold. */
function wrongTypeArb(f: Field): fc.Arbitrary<unknown> {
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
function outOfRangeArb(f: Field): fc.Arbitrary<unknown> | null {
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

function withOwnKey(obj: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const copy = { ...obj };
  // defineProperty, so '__proto__' becomes an own key as JSON.parse would make it
  Object.defineProperty(copy, key, { value, enumerable: true, writable: true, configurable: true });
  return copy;
}

/** A valid object with one definite defect: each result must be refused. */
function definitelyInvalidArb(c: Case): fc.Arbitrary<Record<string, unknown>> {
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

const anythingArb = fc.anything({
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

describe.each(CASES)("decodeParams($name)", (c) => {
  it("accepts the concrete valid examples unchanged", () => {
    for (const example of c.examples) {
      expect(decodeParams(c.schema, example)).toBe(example);
      expect(decodeParams(c.schema, JSON.parse(JSON.stringify(example)))).toEqual(example);
      expect(matchesSpec(example, c)).toBe(true);
    }
  });

  it("accepts every generated valid object, also after a JSON round trip", () => {
    fc.assert(
      fc.property(c.valid, (v) => {
        expect(decode(c.schema, v).accepted).toBe(true);
        expect(decode(c.schema, JSON.parse(JSON.stringify(v))).accepted).toBe(true);
        expect(matchesSpec(v, c)).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it("arbitrary values are accepted and match, or are INVALID_PARAMS", () => {
    fc.assert(
      fc.property(anythingArb, (v) => acceptedAndMatchingOrInvalid(c, v)),
      { numRuns: 500 },
    );
  });

  it("arbitrary JSON bodies are accepted and match, or are INVALID_PARAMS", () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        acceptedAndMatchingOrInvalid(c, v);
        acceptedAndMatchingOrInvalid(c, JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 500 },
    );
  });

  it("a valid object with one field replaced or one key added by anything is accepted and matches, or INVALID_PARAMS", () => {
    const keys = [...Object.keys(c.fields), "extra", "__proto__"];
    fc.assert(
      fc.property(c.valid, fc.constantFrom(...keys), anythingArb, (v, key, x) =>
        acceptedAndMatchingOrInvalid(c, withOwnKey(v, key, x)),
      ),
      { numRuns: 500 },
    );
  });

  it("refuses wrong types, extra keys, missing keys, overlong strings and bad ids with INVALID_PARAMS", () => {
    fc.assert(
      fc.property(definitelyInvalidArb(c), (v) => {
        expectInvalid(c, v);
        expectInvalid(c, JSON.parse(JSON.stringify(v)));
      }),
      { numRuns: 500 },
    );
  });
});

// ---- concrete edges ------------------------------------------------------------------------------

describe("decodeParams edges", () => {
  const execute = {
    sessionId: "s1",
    turnId: "t1",
    token: "tok",
    toolCallId: "c1",
    tool: "Read",
    args: {},
    batch: [{ toolCallId: "c1", tool: "Read" }],
  };

  it("refuses an own __proto__ key from JSON.parse instead of treating it as a prototype", () => {
    const body = JSON.parse('{"turnId":"t1","workerId":"w1","__proto__":{"admin":true}}');
    expect(Object.hasOwn(body, "__proto__")).toBe(true);
    expect(() => decodeParams(ClaimParams, body)).toThrow(AppError);
  });

  it("accepts a null-prototype object with valid fields", () => {
    const body = Object.assign(Object.create(null) as Record<string, unknown>, {
      turnId: "t1",
      workerId: "w1",
    });
    expect(decodeParams(ClaimParams, body)).toBe(body);
  });

  it("handles very deep nesting without a stack overflow", () => {
    const deep = JSON.parse(`${"[".repeat(50_000)}1${"]".repeat(50_000)}`);
    expect(decodeParams(ToolsExecuteParams, { ...execute, args: { deep } }).args.deep).toBe(deep);
    expect(decode(ClaimParams, { turnId: "t1", workerId: "w1", deep }).accepted).toBe(false);
    expect(decode(ClaimParams, { turnId: deep, workerId: "w1" }).accepted).toBe(false);
    expect(decode(ClaimParams, deep).accepted).toBe(false);
  });

  it("refuses ids that could reach a subject or a path: dots, wildcards, spaces, a trailing newline", () => {
    for (const bad of [
      "a.b",
      "a>",
      ">",
      "*",
      "a b",
      "t1\n",
      "\nt1",
      "../x",
      "t1 ",
      "ä",
      "a".repeat(65),
      "",
    ]) {
      expect(decode(ClaimParams, { turnId: bad, workerId: "w1" }).accepted, JSON.stringify(bad)).toBe(false);
      expect(decode(SessionPromptParams, { sessionId: bad, text: "hi" }).accepted, JSON.stringify(bad)).toBe(
        false,
      );
    }
    expect(decode(ClaimParams, { turnId: "a".repeat(64), workerId: "w1" }).accepted).toBe(true);
  });

  it("refuses text one code point over the limit and a non-integer or negative version", () => {
    expect(decode(SessionPromptParams, { sessionId: "s1", text: "x".repeat(200_001) }).accepted).toBe(false);
    expect(decode(SessionPromptParams, { sessionId: "s1", text: "" }).accepted).toBe(false);
    const resolve = { proposalId: "p", sessionId: "s", turnId: "t", toolCallId: "c", action: "approve" };
    for (const version of [1.5, -1, "1", null]) {
      expect(decode(PlansResolveParams, { ...resolve, version }).accepted, String(version)).toBe(false);
    }
  });

  it("refuses a bad batch entry and an empty batch", () => {
    expect(decode(ToolsExecuteParams, { ...execute, batch: [] }).accepted).toBe(false);
    expect(
      decode(ToolsExecuteParams, { ...execute, batch: [{ toolCallId: "", tool: "Read" }] }).accepted,
    ).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, batch: [{ tool: "Read" }] }).accepted).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, batch: ["c1"] }).accepted).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, batch: [{ toolCallId: "c1", tool: "" }] }).accepted).toBe(
      false,
    );
    expect(
      decode(ToolsExecuteParams, { ...execute, batch: [{ toolCallId: "c1", tool: "Read", extra: 1 }] })
        .accepted,
    ).toBe(false);
    expect(decode(ToolsExecuteParams, { ...execute, args: [] }).accepted).toBe(false);
  });

  it("refuses bad nested session fields: model extra key, empty provider, bad approver", () => {
    const base = { projectId: "p1" };
    expect(
      decode(SessionCreateParams, { ...base, model: { provider: "x", model: "y", z: 1 } }).accepted,
    ).toBe(false);
    expect(decode(SessionCreateParams, { ...base, model: { provider: "", model: "y" } }).accepted).toBe(
      false,
    );
    expect(decode(SessionCreateParams, { ...base, approvers: ["bob", "eve.>"] }).accepted).toBe(false);
    expect(decode(SessionCreateParams, { ...base, mode: "chat" }).accepted).toBe(false);
    expect(decode(SessionCreateParams, { ...base, permissionMode: "Auto" }).accepted).toBe(false);
  });

  it("names the problems in the error details", () => {
    const out = decode(ClaimParams, { turnId: "a.b" });
    expect(out.accepted).toBe(false);
    if (!out.accepted) {
      expect(out.error.toWire()).toMatchObject({ code: "INVALID_PARAMS", retriable: false });
      expect(JSON.stringify(out.error.details)).toContain("turnId");
    }
  });
});
