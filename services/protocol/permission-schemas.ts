// Wire schemas of the permission prompt methods (docs/protocol.md, "Permission prompts") and their
// result shapes. Decoded with decodeParams like every other request body.
import { type Static, Type } from "typebox";

const Id = Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" });

export const PermissionDecisionSchema = Type.Union([
  Type.Literal("allow-once"),
  Type.Literal("allow-session"),
  Type.Literal("deny"),
]);
export type PermissionDecision = Static<typeof PermissionDecisionSchema>;

export type PermissionRisk = "low" | "medium" | "high";
export type PermissionStatus = "pending" | "allowed" | "denied";

export const PermissionsPendingParams = Type.Object(
  { sessionId: Type.Optional(Id) },
  { additionalProperties: false },
);
export type PermissionsPendingParams = Static<typeof PermissionsPendingParams>;

export const PermissionsResolveParams = Type.Object(
  { requestId: Id, decision: PermissionDecisionSchema },
  { additionalProperties: false },
);
export type PermissionsResolveParams = Static<typeof PermissionsResolveParams>;

export interface PermissionRequestView {
  requestId: string;
  sessionId: string;
  turnId: string;
  toolCallId: string;
  tool: string;
  risk: PermissionRisk;
  preview: Record<string, unknown>;
  status: PermissionStatus;
  decision: PermissionDecision | null;
  /** Who answered; null while pending or when the host denied it (timeout, abort, fence). */
  principal: string | null;
  code: string | null;
  createdAt: string;
  deadline: string;
  resolvedAt: string | null;
}
