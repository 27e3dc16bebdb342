// Wire schemas of the agent-worker methods (docs/protocol.md, "Agent-worker protocol"): the offer and
// hello a worker hears and says, every request body, and the results the host replies with.
import { type Static, Type } from "typebox";
import { ErrorCodeString, Id, ModelConfig, OperatingMode } from "./values.ts";

/** A provider a worker can run, with its model ids and whether its key is configured there. */
export const ServedProvider = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    models: Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: 2000 }),
    keyConfigured: Type.Boolean(),
  },
  { additionalProperties: false },
);

/** A worker announces itself (and, again every 30 s, what it serves: docs/protocol.md "Models"). */
export const AgentHello = Type.Object(
  {
    workerId: Id,
    protocolVersion: Type.Integer(),
    serves: Type.Optional(Type.Array(ServedProvider, { maxItems: 256 })),
  },
  { additionalProperties: false },
);
export type AgentHello = Static<typeof AgentHello>;

/** A turn waits for a worker; `model`: the session's, so only a worker that serves it claims. */
export const TurnOffer = Type.Object(
  {
    turnId: Id,
    sessionId: Id,
    kind: Type.String(),
    model: Type.Optional(Type.Object({ provider: Type.String(), model: Type.String() })),
    /** The host that owns the turn: the claim and every later call go to its own subjects. */
    host: Id,
  },
  { additionalProperties: false },
);
export type TurnOffer = Static<typeof TurnOffer>;

export const ClaimParams = Type.Object({ turnId: Id, workerId: Id }, { additionalProperties: false });

const TurnAuth = { turnId: Id, token: Type.String({ minLength: 1, maxLength: 256 }) };
/** Parts of one split body or transcript entry, and the characters all its parts may hold. */
export const MAX_PARTS = 256;
export const MAX_PARTS_CHARS = 8 * 1024 * 1024;
/** A token-bearing request: decoded leniently first so a missing token is TURN_TOKEN_INVALID. */
export const TurnAuthParams = Type.Object(TurnAuth);

export const ContextParams = Type.Object(
  {
    ...TurnAuth,
    cursor: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
    /** Inside an entry split into parts: the part to start at (the previous page's `nextPart`). */
    part: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_PARTS - 1 })),
  },
  { additionalProperties: false },
);

/**
 * One part of a request body too big for one message (docs/protocol.md "Message bounds"): the
 * body's JSON text cut into `count` parts; the request itself is then `{turnId, token, bodyParts}`.
 */
export const BodyPartParams = Type.Object(
  {
    ...TurnAuth,
    partId: Id,
    index: Type.Integer({ minimum: 0, maximum: MAX_PARTS - 1 }),
    count: Type.Integer({ minimum: 1, maximum: MAX_PARTS }),
    text: Type.String({ maxLength: MAX_PARTS_CHARS }),
  },
  { additionalProperties: false },
);
export type BodyPartParams = Static<typeof BodyPartParams>;
export const BodyPartResult = Type.Object({ partId: Type.String(), received: Type.Integer() });

/** The most characters one streamed delta (or one coalesced live message) carries. */
export const MAX_DELTA_CHARS = 16 * 1024;

/**
 * Streamed model output of the turn (docs/protocol.md "Live output"): text or thinking as it
 * arrives, in order (`index` counts this turn's deltas from 0). Not stored; the final `message`
 * event is.
 */
export const DeltaParams = Type.Object(
  {
    ...TurnAuth,
    index: Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    kind: Type.Union([Type.Literal("text"), Type.Literal("thinking"), Type.Literal("toolCall")]),
    /** For `toolCall`: the tool's name as the model emitted it (its arguments follow in the message). */
    text: Type.String({ minLength: 1, maxLength: MAX_DELTA_CHARS }),
    toolCallId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { additionalProperties: false },
);
export type DeltaParams = Static<typeof DeltaParams>;
export const DeltaResult = Type.Object({ ok: Type.Boolean() });

/** A request whose body was sent in parts (BodyPartParams) under `bodyParts`. */
export const BodyPartsRef = Type.Object({ ...TurnAuth, bodyParts: Id }, { additionalProperties: false });

export const AppendParams = Type.Object(
  {
    ...TurnAuth,
    messages: Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1, maxItems: 64 }),
  },
  { additionalProperties: false },
);

export const HeartbeatParams = Type.Object(TurnAuth, { additionalProperties: false });

/** The codes a worker may end a turn with. */
export const TURN_FAILURE_CODES = [
  "WORKER_STOPPED",
  "PROVIDER_UNAUTHORIZED",
  "PROVIDER_RATE_LIMITED",
  "PROVIDER_UNREACHABLE",
  "PROVIDER_ERROR",
  "CONTEXT_TOO_LARGE",
  "MODEL_NOT_CONFIGURED",
] as const;
export type TurnFailureCode = (typeof TURN_FAILURE_CODES)[number];
const TurnFailureCode = Type.Union([
  Type.Literal("WORKER_STOPPED"),
  Type.Literal("PROVIDER_UNAUTHORIZED"),
  Type.Literal("PROVIDER_RATE_LIMITED"),
  Type.Literal("PROVIDER_UNREACHABLE"),
  Type.Literal("PROVIDER_ERROR"),
  Type.Literal("CONTEXT_TOO_LARGE"),
  Type.Literal("MODEL_NOT_CONFIGURED"),
]);

export const TurnEndParams = Type.Object(
  {
    ...TurnAuth,
    status: Type.Union([Type.Literal("completed"), Type.Literal("error")]),
    error: Type.Optional(Type.String({ maxLength: 4000 })),
    /**
     * Why the turn failed, when the worker knows: it was stopped (SIGTERM/SIGINT), or the model
     * provider refused or failed (docs/errors.md).
     */
    code: Type.Optional(TurnFailureCode),
  },
  { additionalProperties: false },
);

export const ToolsExecuteParams = Type.Object(
  {
    sessionId: Id,
    ...TurnAuth,
    toolCallId: Type.String({ minLength: 1, maxLength: 256 }),
    tool: Type.String({ minLength: 1, maxLength: 128 }),
    args: Type.Record(Type.String(), Type.Unknown()),
    batch: Type.Array(
      Type.Object(
        {
          toolCallId: Type.String({ minLength: 1, maxLength: 256 }),
          tool: Type.String({ minLength: 1, maxLength: 128 }),
        },
        { additionalProperties: false },
      ),
      { minItems: 1, maxItems: 64 },
    ),
    requestedMode: Type.Optional(Type.String({ maxLength: 32 })),
  },
  { additionalProperties: false },
);
export type ToolsExecuteParams = Static<typeof ToolsExecuteParams>;

// ---- results -----------------------------------------------------------------------------------

export const ToolSpec = Type.Object({
  name: Type.String(),
  description: Type.String(),
  parameters: Type.Record(Type.String(), Type.Unknown()),
});
export type ToolSpec = Static<typeof ToolSpec>;

const TurnKindSchema = Type.Union([Type.Literal("prompt"), Type.Literal("execution")]);

/** What a claim returns: everything the worker needs to run the turn. */
export const TurnAssignment = Type.Object({
  sessionId: Type.String(),
  turnId: Type.String(),
  kind: TurnKindSchema,
  token: Type.String(),
  mode: OperatingMode,
  systemPrompt: Type.String(),
  tools: Type.Array(ToolSpec),
  model: ModelConfig,
  leaseMs: Type.Number(),
  heartbeatMs: Type.Number(),
  /** The host that owns the turn; every call of the turn goes to its subjects (workerHostSubject). */
  host: Type.String(),
});
export type TurnAssignment = Static<typeof TurnAssignment>;

export const ToolResultText = Type.Object({ type: Type.Literal("text"), text: Type.String() });
export type ToolResultText = Static<typeof ToolResultText>;

/** tools.execute result. `next` is set when the call changed the mode (EnterPlanMode). */
export const ToolExecuteResult = Type.Object({
  content: Type.Array(ToolResultText),
  isError: Type.Boolean(),
  code: Type.Optional(ErrorCodeString),
  terminate: Type.Optional(Type.Boolean()),
  details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  next: Type.Optional(
    Type.Object({ mode: OperatingMode, systemPrompt: Type.String(), tools: Type.Array(ToolSpec) }),
  ),
});
export type ToolExecuteResult = Static<typeof ToolExecuteResult>;

/** A page of the session transcript (pi-ai messages); fetch until `nextCursor` is null. */
/**
 * `messages` may hold `{piHostPart: {index, count, json}}` items: one entry too big for a page, its
 * JSON text in parts the worker joins in order. `nextPart` (with `nextCursor`) resumes inside it.
 */
export const ContextPage = Type.Object({
  messages: Type.Array(Type.Unknown()),
  nextCursor: Type.Union([Type.Number(), Type.Null()]),
  nextPart: Type.Optional(Type.Integer()),
});
export type ContextPage = Static<typeof ContextPage>;

export const AppendResult = Type.Object({ appended: Type.Integer() });
export const HeartbeatResult = Type.Object({ ok: Type.Boolean(), leaseMs: Type.Optional(Type.Number()) });
export const TurnEndResult = Type.Object({ turnId: Type.String(), status: Type.String() });
