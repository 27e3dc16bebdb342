// Wire schemas (TypeBox, the copy pi-ai re-exports) for every request body, plus the shared value
// types. decodeParams() is the single decoder of untrusted input: anything malformed is INVALID_PARAMS.
import { type Static, type TSchema, Type } from "typebox";
import { Compile } from "typebox/compile";
import { AppError } from "./app-error.ts";

export type { ProjectView } from "./project-schemas.ts";

const Id = Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" });
const Principal = Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" });

export const OperatingMode = Type.Union([Type.Literal("agent"), Type.Literal("plan")]);
export type OperatingMode = Static<typeof OperatingMode>;

/** Values a session may store. `inherit` defers to the app default, then `ask`. */
export const PermissionMode = Type.Union([
  Type.Literal("inherit"),
  Type.Literal("ask"),
  Type.Literal("accept-edits"),
  Type.Literal("auto"),
]);
export type PermissionMode = Static<typeof PermissionMode>;
export type EffectivePermissionMode = Exclude<PermissionMode, "inherit">;
export const EXECUTION_PERMISSION_MODES = ["ask", "accept-edits", "auto"] as const;

export type PlanningState = "inactive" | "planning" | "awaiting_approval";
export type TurnStatus = "running" | "completed" | "aborted" | "error";
export type TurnKind = "prompt" | "execution";
export type ApprovalStatus = "pending" | "approved" | "rejected" | "expired" | "interrupted";
export type ExecutionState = "queued" | "running" | "completed" | "interrupted";

/** One step of a scripted model (DESIGN §10): tool calls and/or text, optionally after a file appears. */
export const ScriptStep = Type.Object(
  {
    text: Type.Optional(Type.String()),
    toolCalls: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({ minLength: 1 }),
          args: Type.Record(Type.String(), Type.Unknown()),
        }),
        {
          maxItems: 16,
        },
      ),
    ),
    waitForFile: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
export type ScriptStep = Static<typeof ScriptStep>;

export const ModelConfig = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    model: Type.String({ minLength: 1, maxLength: 128 }),
    script: Type.Optional(Type.Array(ScriptStep, { maxItems: 1000 })),
  },
  { additionalProperties: false },
);
export type ModelConfig = Static<typeof ModelConfig>;

// ---- client methods -------------------------------------------------------------------------

export const HelloParams = Type.Object({ protocolVersion: Type.Integer() }, { additionalProperties: false });

export const EmptyParams = Type.Object({}, { additionalProperties: false });

export const SessionCreateParams = Type.Object(
  {
    projectId: Id,
    title: Type.Optional(Type.String({ maxLength: 200 })),
    mode: Type.Optional(OperatingMode),
    permissionMode: Type.Optional(PermissionMode),
    model: Type.Optional(ModelConfig),
    approvers: Type.Optional(Type.Array(Principal, { maxItems: 32 })),
  },
  { additionalProperties: false },
);

export const SessionRef = Type.Object({ sessionId: Id }, { additionalProperties: false });

export const SessionConfigureParams = Type.Object(
  {
    sessionId: Id,
    mode: Type.Optional(OperatingMode),
    permissionMode: Type.Optional(PermissionMode),
    model: Type.Optional(ModelConfig),
    approvers: Type.Optional(Type.Array(Principal, { maxItems: 32 })),
  },
  { additionalProperties: false },
);

export const SessionPromptParams = Type.Object(
  {
    sessionId: Id,
    text: Type.String({ minLength: 1, maxLength: 200_000 }),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);

export const PlansPendingParams = Type.Object(
  { sessionId: Type.Optional(Id) },
  { additionalProperties: false },
);

/**
 * action and targetPermissionMode are plain strings on purpose: the host answers a wrong value with
 * PLAN_INVALID_ACTION / PLAN_PERMISSION_MODE_INVALID in the documented order, not INVALID_PARAMS.
 */
export const PlansResolveParams = Type.Object(
  {
    proposalId: Id,
    sessionId: Id,
    turnId: Id,
    toolCallId: Type.String({ minLength: 1, maxLength: 256 }),
    version: Type.Optional(Type.Integer({ minimum: 0, maximum: 2147483647 })),
    action: Type.String({ maxLength: 64 }),
    targetPermissionMode: Type.Optional(Type.String({ maxLength: 64 })),
  },
  { additionalProperties: false },
);
export type PlansResolveParams = Static<typeof PlansResolveParams>;

export const ArtifactsReadParams = Type.Object({ proposalId: Id }, { additionalProperties: false });

// ---- agent-worker methods ---------------------------------------------------------------------

export const AgentHello = Type.Object(
  { workerId: Id, protocolVersion: Type.Integer() },
  { additionalProperties: false },
);

export const TurnOffer = Type.Object(
  { turnId: Id, sessionId: Id, kind: Type.String() },
  { additionalProperties: false },
);
export type TurnOffer = Static<typeof TurnOffer>;

export const ClaimParams = Type.Object({ turnId: Id, workerId: Id }, { additionalProperties: false });

const TurnAuth = { turnId: Id, token: Type.String({ minLength: 1, maxLength: 256 }) };
/** A token-bearing request: decoded leniently first so a missing token is TURN_TOKEN_INVALID. */
export const TurnAuthParams = Type.Object(TurnAuth);

export const ContextParams = Type.Object(
  {
    ...TurnAuth,
    cursor: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  },
  { additionalProperties: false },
);

export const AppendParams = Type.Object(
  {
    ...TurnAuth,
    messages: Type.Array(Type.Record(Type.String(), Type.Unknown()), { minItems: 1, maxItems: 64 }),
  },
  { additionalProperties: false },
);

export const HeartbeatParams = Type.Object(TurnAuth, { additionalProperties: false });

export const TurnEndParams = Type.Object(
  {
    ...TurnAuth,
    status: Type.Union([Type.Literal("completed"), Type.Literal("error")]),
    error: Type.Optional(Type.String({ maxLength: 4000 })),
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

// ---- shared result shapes ----------------------------------------------------------------------

export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** What a claim returns: everything the worker needs to run the turn. */
export interface TurnAssignment {
  sessionId: string;
  turnId: string;
  kind: TurnKind;
  token: string;
  mode: OperatingMode;
  systemPrompt: string;
  tools: ToolSpec[];
  model: ModelConfig;
  leaseMs: number;
  heartbeatMs: number;
}

export interface ToolResultText {
  type: "text";
  text: string;
}

/** tools.execute result. `next` is set when the call changed the mode (EnterPlanMode). */
export interface ToolExecuteResult {
  content: ToolResultText[];
  isError: boolean;
  code?: string;
  terminate?: boolean;
  details?: Record<string, unknown>;
  next?: { mode: OperatingMode; systemPrompt: string; tools: ToolSpec[] };
}

export interface SessionView {
  id: string;
  projectId: string;
  title: string;
  owner: string;
  approvers: string[];
  mode: OperatingMode;
  permissionMode: PermissionMode;
  planningState: PlanningState;
  model: { provider: string; model: string };
  version: number;
  activeTurnId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface ProposalView {
  proposalId: string;
  sessionId: string;
  turnId: string;
  toolCallId: string;
  title: string;
  question: string;
  artifactPath: string;
  sha256: string;
  byteSize: number;
  status: ApprovalStatus;
  action: string | null;
  targetPermissionMode: string | null;
  deadline: string;
  version: number;
  executionId: string | null;
  executionState: ExecutionState | null;
  errorCode: string | null;
  createdAt: string;
  resolvedAt: string | null;
}

// ---- decoding -----------------------------------------------------------------------------------

const compiled = new WeakMap<TSchema, ReturnType<typeof Compile>>();

/** Checks untrusted input against a schema; a mismatch is INVALID_PARAMS naming the first problems. */
export function decodeParams<S extends TSchema>(schema: S, value: unknown): Static<S> {
  let validator = compiled.get(schema);
  if (!validator) {
    validator = Compile(schema);
    compiled.set(schema, validator);
  }
  if (validator.Check(value)) return value as Static<S>;
  const problems = [...validator.Errors(value)]
    .slice(0, 5)
    .map((e) => `${e.instancePath || "/"} ${e.message}`);
  throw new AppError("INVALID_PARAMS", `invalid params: ${problems.join("; ")}`, { details: { problems } });
}
