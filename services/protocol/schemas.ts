// Wire schemas (TypeBox, the copy pi-ai re-exports) of the session, plan and artifact methods and
// their views; re-exports the shared values, the agent-worker and host schemas and decodeParams().
import { type Static, Type } from "typebox";
import {
  type ExecutionPermissionMode as ExecutionPermissionModeType,
  ErrorCodeString,
  Id,
  ModelConfig,
  ModelName,
  Nullable,
  OperatingMode,
  PermissionMode,
  Timestamp,
} from "./values.ts";
import { AfterPage, BeforePage, LIST_PAGE_MAX_BYTES, LIST_PAGE_MAX_ROWS, PageNext } from "./pages.ts";

export type { ProjectView } from "./project-schemas.ts";
export {
  AgentHello,
  AppendParams,
  BodyPartParams,
  BodyPartsRef,
  DeltaParams,
  ClaimParams,
  ContextParams,
  HeartbeatParams,
  ToolExecuteResult,
  ToolResultText,
  ToolSpec,
  ToolsExecuteParams,
  TurnAssignment,
  TurnAuthParams,
  TurnEndParams,
  TurnOffer,
} from "./agent-schemas.ts";
export { decodeParams } from "./decode.ts";
export { HelloResult, HostStatus, HostStatusHost, ModelList, WorkerList } from "./host-schemas.ts";
export {
  type ApprovalStatus,
  EXECUTION_PERMISSION_MODES,
  ExecutionPermissionMode,
  type ExecutionState,
  type Mode,
  ModelConfig,
  OperatingMode,
  PermissionMode,
  type PlanningState,
  ScriptStep,
  type TurnKind,
  type TurnStatus,
} from "./values.ts";
/** `inherit` resolved: the one execution permission mode type (values.ts). */
export type EffectivePermissionMode = ExecutionPermissionModeType;

const Principal = Id;

// ---- client methods -------------------------------------------------------------------------

export const HelloParams = Type.Object({ protocolVersion: Type.Integer() }, { additionalProperties: false });

export const EmptyParams = Type.Object({}, { additionalProperties: false });

/** A list with no filter, paged by `after` (docs/protocol.md "Lists and pages"). */
export const AfterPageParams = Type.Object({ ...AfterPage }, { additionalProperties: false });
export type AfterPageParams = Static<typeof AfterPageParams>;
/** session.list: newest first, paged by `before`. */
export const SessionListParams = Type.Object({ ...BeforePage }, { additionalProperties: false });
export type SessionListParams = Static<typeof SessionListParams>;

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
export type SessionConfigureParams = Static<typeof SessionConfigureParams>;

export const SessionPromptParams = Type.Object(
  {
    sessionId: Id,
    text: Type.String({ minLength: 1, maxLength: 200_000 }),
    idempotencyKey: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  },
  { additionalProperties: false },
);
export type SessionPromptParams = Static<typeof SessionPromptParams>;

export const PlansPendingParams = Type.Object(
  { sessionId: Type.Optional(Id), ...AfterPage },
  { additionalProperties: false },
);
export type PlansPendingParams = Static<typeof PlansPendingParams>;

/** Proposals in one plans.history page at most; a page is also bounded in bytes (below). */
export const PLANS_HISTORY_MAX_ROWS = LIST_PAGE_MAX_ROWS;
/** Bytes of the proposals' JSON in one plans.history page at most (at least one is always returned). */
export const PLANS_HISTORY_MAX_BYTES = LIST_PAGE_MAX_BYTES;
/**
 * A plans.history position, opaque to clients: the previous page's `next`. (The host spells it
 * `<created_at in microseconds since the epoch>.<proposalId>`, a keyset on the page's order.)
 */
export const PlanHistoryCursor = Type.String({ pattern: "^[0-9]{1,18}\\.[A-Za-z0-9_-]{1,64}$" });

export const PlansHistoryParams = Type.Object(
  {
    sessionId: Id,
    /** Proposals in the page (default 50). */
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: PLANS_HISTORY_MAX_ROWS })),
    /** Proposals older than this position (the previous page's `next`); absent: the newest. */
    before: Type.Optional(PlanHistoryCursor),
  },
  { additionalProperties: false },
);
export type PlansHistoryParams = Static<typeof PlansHistoryParams>;

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

/**
 * One page of a plan file: `offset` (default 0) is a byte offset, at most the file's size;
 * `maxBytes` caps the page below the host's own page bound (docs/protocol.md "Message bounds").
 */
export const ArtifactsReadPageParams = Type.Object(
  {
    proposalId: Id,
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER })),
    maxBytes: Type.Optional(Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER })),
  },
  { additionalProperties: false },
);
export type ArtifactsReadPageParams = Static<typeof ArtifactsReadPageParams>;

// ---- project members (docs/security.md "Projects have owners and members") ----------------------

export const ProjectMemberParams = Type.Object(
  { projectId: Id, principal: Principal },
  { additionalProperties: false },
);
export type ProjectMemberParams = Static<typeof ProjectMemberParams>;

/** projects.members.list: the owner first, then by when each was added, paged by `after`. */
export const ProjectMembersListParams = Type.Object(
  { projectId: Id, ...AfterPage },
  { additionalProperties: false },
);
export type ProjectMembersListParams = Static<typeof ProjectMembersListParams>;

/** One page of a project's members (add and remove answer the first page). */
export const ProjectMembersView = Type.Object({
  projectId: Type.String(),
  owner: Type.String(),
  /** The owner first; `addedBy` null for members the project-members migration derived. */
  members: Type.Array(
    Type.Object({ principal: Type.String(), addedBy: Nullable(Type.String()), addedAt: Timestamp }),
  ),
  next: PageNext,
});
export type ProjectMembersView = Static<typeof ProjectMembersView>;

// ---- views (results) ---------------------------------------------------------------------------

const PlanningStateSchema = Type.Union([
  Type.Literal("inactive"),
  Type.Literal("planning"),
  Type.Literal("awaiting_approval"),
]);

const UsageCounts = {
  input: Type.Number(),
  output: Type.Number(),
  cacheRead: Type.Number(),
  cacheWrite: Type.Number(),
  cost: Type.Number(),
};
export const SessionUsage = Type.Object({
  ...UsageCounts,
  lastTurn: Nullable(Type.Object({ turnId: Type.String(), ...UsageCounts })),
});
export type SessionUsage = Static<typeof SessionUsage>;

export const SessionView = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  title: Type.String(),
  owner: Type.String(),
  approvers: Type.Array(Type.String()),
  mode: OperatingMode,
  permissionMode: PermissionMode,
  planningState: PlanningStateSchema,
  model: ModelName,
  version: Type.Integer(),
  activeTurnId: Nullable(Type.String()),
  /** The session actor's state value (`machine.state`), or "passivated" when no actor is alive. */
  machineState: Type.String(),
  /** What the model reported using: the session's total and its last turn's (cost in the model's prices, 0 without). */
  usage: SessionUsage,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type SessionView = Static<typeof SessionView>;

const ApprovalStatusSchema = Type.Union([
  Type.Literal("pending"),
  Type.Literal("approved"),
  Type.Literal("rejected"),
  Type.Literal("expired"),
  Type.Literal("interrupted"),
]);
const ExecutionStateSchema = Type.Union([
  Type.Literal("queued"),
  Type.Literal("running"),
  Type.Literal("completed"),
  Type.Literal("interrupted"),
]);

export const ProposalView = Type.Object({
  proposalId: Type.String(),
  sessionId: Type.String(),
  turnId: Type.String(),
  toolCallId: Type.String(),
  title: Type.String(),
  question: Type.String(),
  artifactPath: Type.String(),
  sha256: Type.String(),
  byteSize: Type.Integer(),
  status: ApprovalStatusSchema,
  action: Nullable(Type.String()),
  targetPermissionMode: Nullable(Type.String()),
  deadline: Timestamp,
  version: Type.Integer(),
  executionId: Nullable(Type.String()),
  executionState: Nullable(ExecutionStateSchema),
  /** An ErrorCode; typed as a string until the plan store reads it as one. */
  errorCode: Nullable(Type.String()),
  createdAt: Timestamp,
  resolvedAt: Nullable(Timestamp),
});
export type ProposalView = Static<typeof ProposalView>;

export const SessionList = Type.Object({ sessions: Type.Array(SessionView), next: PageNext });
export type SessionList = Static<typeof SessionList>;
export const PromptResult = Type.Object({ turnId: Type.String() });
export const AbortResult = Type.Object({
  sessionId: Type.String(),
  aborted: Nullable(
    Type.Object({ turnId: Type.String(), code: ErrorCodeString, proposalId: Nullable(Type.String()) }),
  ),
});
export const ProposalList = Type.Object({ proposals: Type.Array(ProposalView), next: PageNext });
export type ProposalList = Static<typeof ProposalList>;
/** A session's proposals of every status, newest first; `next` is the `before` of the older page, or null. */
export const ProposalHistoryPage = Type.Object({
  proposals: Type.Array(ProposalView),
  next: Nullable(PlanHistoryCursor),
});
export type ProposalHistoryPage = Static<typeof ProposalHistoryPage>;
/**
 * One page of a plan file: `data` is the base64 of its bytes `[offset, nextOffset ?? byteSize)`;
 * `byteSize`, `sha256` and `matchesRecord` describe the whole file as read for this page,
 * `recordedSha256` is what was submitted. `nextOffset` is null after the last page.
 */
export const ArtifactContent = Type.Object({
  proposalId: Type.String(),
  path: Type.String(),
  byteSize: Type.Integer(),
  sha256: Type.String(),
  recordedSha256: Type.String(),
  matchesRecord: Type.Boolean(),
  offset: Type.Integer(),
  data: Type.String(),
  nextOffset: Nullable(Type.Integer()),
});
export type ArtifactContent = Static<typeof ArtifactContent>;

// ---- events.since (docs/protocol.md "Events") ---------------------------------------------------

/**
 * A caller-wide event position: 32 lowercase hex digits, two halves of 16 that are each below 2^63
 * (store/event-store.ts `cursorOf`).
 */
export const EventCursor = Type.String({ pattern: "^[0-7][0-9a-f]{15}[0-7][0-9a-f]{15}$" });
/**
 * `after` is the previous page's `next`; 0 or absent: from the oldest kept; `"now"`: no events, and
 * `next` is a position from which nothing committed from now on is missed.
 */
export const EventsSinceParams = Type.Object(
  {
    after: Type.Optional(Type.Union([Type.Literal(0), Type.Literal("now"), EventCursor])),
    sessionId: Type.Optional(Id),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })),
  },
  { additionalProperties: false },
);
export type EventsSinceParams = Static<typeof EventsSinceParams>;
/** One session event as published (events.ts `SessionEvent`): its body's fields beside these. */
export const StoredSessionEvent = Type.Object(
  { type: Type.String(), sessionId: Type.String(), at: Timestamp, seq: Type.Integer({ minimum: 1 }) },
  { additionalProperties: true },
);
export type StoredSessionEvent = Static<typeof StoredSessionEvent> & Record<string, unknown>;
export const EventsPage = Type.Object({
  events: Type.Array(StoredSessionEvent),
  next: Type.Union([Type.Literal("0"), EventCursor]),
  more: Type.Boolean(),
});
