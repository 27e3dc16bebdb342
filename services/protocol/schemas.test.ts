// Property tests for decodeParams, the one decoder of untrusted request bodies: whatever arrives is
// either accepted as a value that matches its schema, or refused with AppError INVALID_PARAMS.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  ClaimParams,
  decodeParams,
  PlansResolveParams,
  SessionCreateParams,
  SessionPromptParams,
  ToolsExecuteParams,
} from "./schemas.ts";
import {
  type Case,
  acceptedAndMatchingOrInvalid,
  anythingArb,
  decode,
  definitelyInvalidArb,
  expectInvalid,
  idArb,
  jsonObject,
  matchesSpec,
  modelArb,
  permissionModes,
  str,
  withOwnKey,
} from "./decode-properties.test-support.ts";

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
