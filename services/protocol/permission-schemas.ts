// Wire schemas of the permission prompt methods (docs/protocol.md, "Permission prompts") and their
// result shapes. Decoded with decodeParams like every other request body.
import { type Static, Type } from "typebox";
import { AfterPage, PageNext } from "./pages.ts";
import { Id, Nullable, Timestamp } from "./values.ts";

export const PermissionDecisionSchema = Type.Union([
  Type.Literal("allow-once"),
  Type.Literal("allow-session"),
  Type.Literal("deny"),
]);
export type PermissionDecision = Static<typeof PermissionDecisionSchema>;

const RiskSchema = Type.Union([Type.Literal("low"), Type.Literal("medium"), Type.Literal("high")]);
export type PermissionRisk = Static<typeof RiskSchema>;
const StatusSchema = Type.Union([Type.Literal("pending"), Type.Literal("allowed"), Type.Literal("denied")]);
export type PermissionStatus = Static<typeof StatusSchema>;

export const PermissionsPendingParams = Type.Object(
  { sessionId: Type.Optional(Id), ...AfterPage },
  { additionalProperties: false },
);
export type PermissionsPendingParams = Static<typeof PermissionsPendingParams>;

export const PermissionsResolveParams = Type.Object(
  { requestId: Id, decision: PermissionDecisionSchema },
  { additionalProperties: false },
);
export type PermissionsResolveParams = Static<typeof PermissionsResolveParams>;

export const PermissionRequestView = Type.Object({
  requestId: Type.String(),
  sessionId: Type.String(),
  turnId: Type.String(),
  toolCallId: Type.String(),
  tool: Type.String(),
  risk: RiskSchema,
  preview: Type.Record(Type.String(), Type.Unknown()),
  status: StatusSchema,
  decision: Nullable(PermissionDecisionSchema),
  /** Who answered; null while pending or when the host denied it (timeout, abort, fence). */
  principal: Nullable(Type.String()),
  /** An ErrorCode; typed as a string until the permission gate reads it as one. */
  code: Nullable(Type.String()),
  createdAt: Timestamp,
  deadline: Timestamp,
  resolvedAt: Nullable(Timestamp),
});
export type PermissionRequestView = Static<typeof PermissionRequestView>;

export const PermissionRequestList = Type.Object({
  requests: Type.Array(PermissionRequestView),
  next: PageNext,
});
export type PermissionRequestList = Static<typeof PermissionRequestList>;
