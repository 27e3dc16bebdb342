// The NATS service error code (`Nats-Service-Error-Code`) of every error code, a stable HTTP-like
// number (docs/protocol.md, "Service error headers"). The body's `error.code` stays the contract.
import type { ErrorCode } from "./error-codes.ts";

export type ServiceErrorStatus = 400 | 403 | 404 | 409 | 500 | 503;

const BY_STATUS: Record<Exclude<ServiceErrorStatus, 400>, readonly ErrorCode[]> = {
  403: ["FORBIDDEN", "TURN_TOKEN_INVALID", "TEST_HOOKS_DISABLED"],
  404: [
    "UNKNOWN_METHOD",
    "PROJECT_NOT_FOUND",
    "SESSION_NOT_FOUND",
    "PLAN_NOT_FOUND",
    "PERMISSION_NOT_FOUND",
    "PLUGIN_NOT_FOUND",
    "SCHEDULED_TASK_NOT_FOUND",
    "FILE_NOT_FOUND",
    "TOOL_NOT_FOUND",
  ],
  409: [
    "PROJECT_VERSION_CONFLICT",
    "PROJECT_OWNER_CANNOT_LEAVE",
    "SESSION_DEGRADED",
    "TURN_NOT_CLAIMABLE",
    "TURN_ABORTED",
    "TURN_LEASE_EXPIRED",
    "PLAN_APPROVAL_STALE",
    "PLAN_ALREADY_RESOLVED",
    "PLAN_APPROVAL_TIMEOUT",
    "PLAN_APPROVAL_INTERRUPTED",
    "PLAN_EXECUTION_INTERRUPTED",
    "PLAN_EXECUTION_STALE",
    "PLAN_ARTIFACT_HASH_MISMATCH",
    "PERMISSION_ALREADY_RESOLVED",
    "PERMISSION_TIMEOUT",
    "PLAN_REQUIRES_INTERACTIVE_SESSION",
  ],
  500: ["INTERNAL"],
  // Retriable refusals: the same request may succeed later.
  503: [
    "AGENT_BUSY",
    "HOST_SHUTTING_DOWN",
    "HOST_UNAVAILABLE",
    "SESSION_LEASE_LOST",
    "HOST_OVERLOADED",
    "HOST_FENCED",
    "PLAN_APPROVAL_CONFLICT",
    "PLAN_CONFIGURATION_BLOCKED",
    "PLUGIN_UNAVAILABLE",
    "PLAN_ARTIFACT_WRITE_FAILED",
    "PLAN_ARTIFACT_COLLISION_LIMIT",
    "DATABASE_UNAVAILABLE",
    "PROVIDER_RATE_LIMITED",
    "PROVIDER_UNREACHABLE",
    "PROVIDER_ERROR",
  ],
};

const STATUS = new Map<ErrorCode, ServiceErrorStatus>(
  Object.entries(BY_STATUS).flatMap(([status, codes]) =>
    codes.map((code) => [code, Number(status) as ServiceErrorStatus] as const),
  ),
);

/** 403 forbidden, 404 not found, 409 conflicts with the current state, 500 INTERNAL, 503 retriable, else 400. */
export function serviceErrorStatus(code: ErrorCode): ServiceErrorStatus {
  return STATUS.get(code) ?? 400;
}

/** The listed codes per status (for docs/protocol.md's table and its test). */
export const SERVICE_ERROR_STATUS: Readonly<Record<Exclude<ServiceErrorStatus, 400>, readonly ErrorCode[]>> =
  BY_STATUS;
