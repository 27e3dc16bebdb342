// The one registry of stable error codes shared by host, agent worker, CLI and tests.
// docs/errors.md lists every code; tests/error-registry.test.ts keeps the two equal.

export const ErrorCode = {
  INVALID_PARAMS: "INVALID_PARAMS",
  INTERNAL: "INTERNAL",
  PROTOCOL_MISMATCH: "PROTOCOL_MISMATCH",
  UNKNOWN_METHOD: "UNKNOWN_METHOD",
  FORBIDDEN: "FORBIDDEN",
  PROJECT_NOT_FOUND: "PROJECT_NOT_FOUND",
  PROJECT_VERSION_CONFLICT: "PROJECT_VERSION_CONFLICT",
  PROJECT_OWNER_CANNOT_LEAVE: "PROJECT_OWNER_CANNOT_LEAVE",
  SESSION_NOT_FOUND: "SESSION_NOT_FOUND",
  WORKSPACE_NOT_ALLOWED: "WORKSPACE_NOT_ALLOWED",
  PROJECT_ROOT_OVERLAPS: "PROJECT_ROOT_OVERLAPS",
  WORKSPACE_NOT_USABLE: "WORKSPACE_NOT_USABLE",
  AGENT_BUSY: "AGENT_BUSY",
  HOST_OVERLOADED: "HOST_OVERLOADED",
  SESSION_DEGRADED: "SESSION_DEGRADED",
  TEST_HOOKS_DISABLED: "TEST_HOOKS_DISABLED",
  TURN_TOKEN_INVALID: "TURN_TOKEN_INVALID",
  TURN_NOT_CLAIMABLE: "TURN_NOT_CLAIMABLE",
  TURN_ABORTED: "TURN_ABORTED",
  TURN_LEASE_EXPIRED: "TURN_LEASE_EXPIRED",
  TOOL_NOT_FOUND: "TOOL_NOT_FOUND",
  TOOL_DISABLED_IN_PLAN: "TOOL_DISABLED_IN_PLAN",
  TOOL_MUST_BE_ALONE: "TOOL_MUST_BE_ALONE",
  TOOL_FAILED: "TOOL_FAILED",
  TOOL_TIMEOUT: "TOOL_TIMEOUT",
  PLUGIN_DISABLED_IN_PLAN: "PLUGIN_DISABLED_IN_PLAN",
  PLUGIN_NOT_FOUND: "PLUGIN_NOT_FOUND",
  PLUGIN_UNAVAILABLE: "PLUGIN_UNAVAILABLE",
  WRITE_DISABLED_IN_PLAN: "WRITE_DISABLED_IN_PLAN",
  EDIT_DISABLED_IN_PLAN: "EDIT_DISABLED_IN_PLAN",
  PERMISSION_REQUIRED: "PERMISSION_REQUIRED",
  PERMISSION_DENIED: "PERMISSION_DENIED",
  PERMISSION_TIMEOUT: "PERMISSION_TIMEOUT",
  PERMISSION_NOT_FOUND: "PERMISSION_NOT_FOUND",
  PERMISSION_ALREADY_RESOLVED: "PERMISSION_ALREADY_RESOLVED",
  SANDBOX_UNAVAILABLE: "SANDBOX_UNAVAILABLE",
  PATH_OUTSIDE_WORKSPACE: "PATH_OUTSIDE_WORKSPACE",
  BROWSER_URL_NOT_ALLOWED: "BROWSER_URL_NOT_ALLOWED",
  WORKSPACE_PATH_DENIED: "WORKSPACE_PATH_DENIED",
  FILE_NOT_FOUND: "FILE_NOT_FOUND",
  FILE_IS_BINARY: "FILE_IS_BINARY",
  FILE_NOT_READABLE: "FILE_NOT_READABLE",
  EDIT_NO_MATCH: "EDIT_NO_MATCH",
  EDIT_NOT_UNIQUE: "EDIT_NOT_UNIQUE",
  PLAN_NOT_ACTIVE: "PLAN_NOT_ACTIVE",
  PLAN_ALREADY_ACTIVE: "PLAN_ALREADY_ACTIVE",
  PLAN_ALREADY_PENDING: "PLAN_ALREADY_PENDING",
  PLAN_WORKSPACE_REQUIRED: "PLAN_WORKSPACE_REQUIRED",
  PLAN_INVALID_ARGUMENT: "PLAN_INVALID_ARGUMENT",
  PLAN_MARKDOWN_TOO_LARGE: "PLAN_MARKDOWN_TOO_LARGE",
  PLAN_ARTIFACT_PATH_UNSAFE: "PLAN_ARTIFACT_PATH_UNSAFE",
  PLAN_ARTIFACT_WRITE_FAILED: "PLAN_ARTIFACT_WRITE_FAILED",
  PLAN_ARTIFACT_COLLISION_LIMIT: "PLAN_ARTIFACT_COLLISION_LIMIT",
  PLAN_ARTIFACT_HASH_MISMATCH: "PLAN_ARTIFACT_HASH_MISMATCH",
  PLAN_NOT_FOUND: "PLAN_NOT_FOUND",
  PLAN_APPROVAL_STALE: "PLAN_APPROVAL_STALE",
  PLAN_INVALID_ACTION: "PLAN_INVALID_ACTION",
  PLAN_PERMISSION_MODE_REQUIRED: "PLAN_PERMISSION_MODE_REQUIRED",
  PLAN_PERMISSION_MODE_INVALID: "PLAN_PERMISSION_MODE_INVALID",
  PLAN_ALREADY_RESOLVED: "PLAN_ALREADY_RESOLVED",
  PLAN_APPROVAL_TIMEOUT: "PLAN_APPROVAL_TIMEOUT",
  PLAN_APPROVAL_CONFLICT: "PLAN_APPROVAL_CONFLICT",
  PLAN_APPROVAL_INTERRUPTED: "PLAN_APPROVAL_INTERRUPTED",
  PLAN_EXECUTION_INTERRUPTED: "PLAN_EXECUTION_INTERRUPTED",
  PLAN_EXECUTION_STALE: "PLAN_EXECUTION_STALE",
  PLAN_CONFIGURATION_BLOCKED: "PLAN_CONFIGURATION_BLOCKED",
  HOST_RESTARTED: "HOST_RESTARTED",
  HOST_FENCED: "HOST_FENCED",
  SESSION_LEASE_LOST: "SESSION_LEASE_LOST",
  HOST_ID_IN_USE: "HOST_ID_IN_USE",
  PERMISSION_INTERRUPTED: "PERMISSION_INTERRUPTED",
  PLAN_REQUIRES_INTERACTIVE_SESSION: "PLAN_REQUIRES_INTERACTIVE_SESSION",
  SCHEDULED_TASK_NOT_FOUND: "SCHEDULED_TASK_NOT_FOUND",
  REPLY_TOO_LARGE: "REPLY_TOO_LARGE",
  DATABASE_UNAVAILABLE: "DATABASE_UNAVAILABLE",
  HOST_STOPPING: "HOST_STOPPING",
  HOST_SHUTTING_DOWN: "HOST_SHUTTING_DOWN",
  HOST_UNAVAILABLE: "HOST_UNAVAILABLE",
  WORKER_STOPPED: "WORKER_STOPPED",
  TOOL_OUTCOME_UNKNOWN: "TOOL_OUTCOME_UNKNOWN",
  PROVIDER_UNAUTHORIZED: "PROVIDER_UNAUTHORIZED",
  PROVIDER_RATE_LIMITED: "PROVIDER_RATE_LIMITED",
  PROVIDER_UNREACHABLE: "PROVIDER_UNREACHABLE",
  PROVIDER_ERROR: "PROVIDER_ERROR",
  CONTEXT_TOO_LARGE: "CONTEXT_TOO_LARGE",
  MODEL_NOT_CONFIGURED: "MODEL_NOT_CONFIGURED",
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export interface ErrorCodeInfo {
  retriable: boolean;
  message: string;
}

export const errorCodeInfo: Record<ErrorCode, ErrorCodeInfo> = {
  INVALID_PARAMS: { retriable: false, message: "The request body does not match the method's schema." },
  INTERNAL: { retriable: true, message: "An unexpected host failure; nothing was committed." },
  PROTOCOL_MISMATCH: { retriable: false, message: "Client and host speak different protocol versions." },
  UNKNOWN_METHOD: { retriable: false, message: "No such method on this subject." },
  FORBIDDEN: { retriable: false, message: "The principal is neither the session's owner nor an approver." },
  PROJECT_NOT_FOUND: { retriable: false, message: "No project with that id." },
  PROJECT_VERSION_CONFLICT: {
    retriable: false,
    message: "The project changed since the version the request expected; read it again.",
  },
  PROJECT_OWNER_CANNOT_LEAVE: {
    retriable: false,
    message: "The project's owner is always a member and cannot leave it.",
  },
  SESSION_NOT_FOUND: { retriable: false, message: "No session with that id." },
  WORKSPACE_NOT_ALLOWED: {
    retriable: false,
    message: "The workspace root is not an existing directory under a configured root.",
  },
  PROJECT_ROOT_OVERLAPS: {
    retriable: false,
    message: "The project root is, contains or lies inside another project's root.",
  },
  WORKSPACE_NOT_USABLE: {
    retriable: false,
    message:
      "The sandbox user cannot read, write and enter the workspace; grant it access (or let the host: PI_SANDBOX_GRANT_ACL=1).",
  },
  AGENT_BUSY: {
    retriable: true,
    message: "The session has a running turn, a pending approval or a queued/running execution.",
  },
  HOST_OVERLOADED: { retriable: true, message: "The host is at its concurrency limit; retry later." },
  SESSION_DEGRADED: {
    retriable: false,
    message:
      "The session's actor failed more often than the restart bound allows; the session refuses requests until the host restarts.",
  },
  TEST_HOOKS_DISABLED: { retriable: false, message: "Test hooks are only served with PI_TEST_HOOKS=1." },
  TURN_TOKEN_INVALID: {
    retriable: false,
    message: "The capability token is missing, revoked or belongs to another turn.",
  },
  TURN_NOT_CLAIMABLE: { retriable: false, message: "The turn was claimed already, ended or fenced." },
  TURN_ABORTED: { retriable: false, message: "The turn was aborted." },
  TURN_LEASE_EXPIRED: { retriable: false, message: "The worker stopped heartbeating; the turn was aborted." },
  TOOL_NOT_FOUND: { retriable: false, message: "No such tool in Agent mode." },
  TOOL_DISABLED_IN_PLAN: { retriable: false, message: "The tool is not available in Plan mode." },
  TOOL_MUST_BE_ALONE: {
    retriable: false,
    message: "EnterPlanMode and ExitPlanMode must be the only tool call of their batch.",
  },
  TOOL_FAILED: { retriable: false, message: "The tool ran and failed." },
  TOOL_TIMEOUT: {
    retriable: false,
    message: "The tool ran past its timeout; it and every process it started were ended.",
  },
  PLUGIN_DISABLED_IN_PLAN: { retriable: false, message: "Plugin tools are hidden and denied in Plan mode." },
  PLUGIN_NOT_FOUND: { retriable: false, message: "No plugin with that id is registered." },
  PLUGIN_UNAVAILABLE: {
    retriable: true,
    message: "The plugin process did not answer (no responder or timeout); the call may not have run.",
  },
  WRITE_DISABLED_IN_PLAN: { retriable: false, message: "Write is denied in Plan mode." },
  EDIT_DISABLED_IN_PLAN: { retriable: false, message: "Edit is denied in Plan mode." },
  PERMISSION_REQUIRED: {
    retriable: false,
    message:
      "The call needs a person's confirmation, but the run is unattended (scheduled): nobody is asked, it is denied.",
  },
  PERMISSION_DENIED: { retriable: false, message: "A person denied the permission prompt." },
  PERMISSION_TIMEOUT: {
    retriable: false,
    message: "Nobody answered the permission prompt before its deadline (PI_PERMISSION_TIMEOUT_MS); denied.",
  },
  PERMISSION_NOT_FOUND: { retriable: false, message: "No permission request with that id." },
  PERMISSION_ALREADY_RESOLVED: {
    retriable: false,
    message: "The permission request was already answered, timed out or interrupted.",
  },
  SANDBOX_UNAVAILABLE: {
    retriable: false,
    message: "The tool sandbox cannot start here; the program was not run unconfined.",
  },
  PATH_OUTSIDE_WORKSPACE: { retriable: false, message: "The path resolves outside the workspace." },
  BROWSER_URL_NOT_ALLOWED: {
    retriable: false,
    message:
      "BrowserPreview loads only loopback http(s) URLs, workspace file:// URLs and the project's listed origins.",
  },
  WORKSPACE_PATH_DENIED: {
    retriable: false,
    message: "The path is on the deny-list (keys, .env, .git/objects, or .pi/plan for writes).",
  },
  FILE_NOT_FOUND: { retriable: false, message: "No such file in the workspace." },
  FILE_IS_BINARY: { retriable: false, message: "Read refuses binary files." },
  FILE_NOT_READABLE: {
    retriable: false,
    message:
      "The sandbox user may not read (or write) that file (the host never reads it for the agent), or the host cannot read a plan file (or it is larger than any plan).",
  },
  EDIT_NO_MATCH: { retriable: false, message: "Edit's old text does not occur in the file." },
  EDIT_NOT_UNIQUE: { retriable: false, message: "Edit's old text occurs more than once." },
  PLAN_NOT_ACTIVE: { retriable: false, message: "ExitPlanMode outside an active Plan turn." },
  PLAN_ALREADY_ACTIVE: { retriable: false, message: "EnterPlanMode while already in Plan." },
  PLAN_ALREADY_PENDING: { retriable: false, message: "The session already has a pending plan approval." },
  PLAN_WORKSPACE_REQUIRED: { retriable: false, message: "A plan needs a session bound to a workspace." },
  PLAN_INVALID_ARGUMENT: {
    retriable: false,
    message: "Title, markdown and question must be non-empty text without a NUL or an unpaired surrogate.",
  },
  PLAN_MARKDOWN_TOO_LARGE: { retriable: false, message: "The plan is larger than 512 KiB." },
  PLAN_ARTIFACT_PATH_UNSAFE: {
    retriable: false,
    message:
      ".pi or .pi/plan is a symlink, not a folder or not sealed (owner, group/other write, an ACL write entry, a default ACL), or a plan file is a symlink or not a regular file; nothing was repaired.",
  },
  PLAN_ARTIFACT_WRITE_FAILED: {
    retriable: true,
    message: "The plan file could not be written; no row exists.",
  },
  PLAN_ARTIFACT_COLLISION_LIMIT: {
    retriable: true,
    message: "Too many plan files with the same name and time.",
  },
  PLAN_ARTIFACT_HASH_MISMATCH: {
    retriable: false,
    message: "The approved plan file changed after approval; the execution was not run.",
  },
  PLAN_NOT_FOUND: { retriable: false, message: "No plan proposal with that id." },
  PLAN_APPROVAL_STALE: {
    retriable: false,
    message: "The response names another turn or tool call, or refers to fenced or aborted work.",
  },
  PLAN_INVALID_ACTION: { retriable: false, message: "The action must be approve or reject." },
  PLAN_PERMISSION_MODE_REQUIRED: {
    retriable: false,
    message: "Approve needs an explicit target permission mode.",
  },
  PLAN_PERMISSION_MODE_INVALID: {
    retriable: false,
    message: "The target permission mode must be ask, accept-edits or auto.",
  },
  PLAN_ALREADY_RESOLVED: { retriable: false, message: "The plan was already resolved differently." },
  PLAN_APPROVAL_TIMEOUT: { retriable: false, message: "The approval deadline passed; the plan expired." },
  PLAN_APPROVAL_CONFLICT: {
    retriable: true,
    message: "The row's version differs or a concurrent change is in progress.",
  },
  PLAN_APPROVAL_INTERRUPTED: {
    retriable: false,
    message: "The pending approval was interrupted by an abort or a host restart.",
  },
  PLAN_EXECUTION_INTERRUPTED: {
    retriable: false,
    message: "The approved execution was interrupted by an abort or a host restart.",
  },
  PLAN_EXECUTION_STALE: { retriable: false, message: "The execution was already claimed or ended." },
  PLAN_CONFIGURATION_BLOCKED: {
    retriable: true,
    message: "Configuration changes wait until no turn, approval or execution is in progress.",
  },
  HOST_RESTARTED: {
    retriable: false,
    message: "Recorded on turns the startup fence aborted: the host restarted; nothing is replayed.",
  },
  HOST_FENCED: {
    retriable: true,
    message: "This host was superseded by a newer incarnation and committed nothing; it stops serving.",
  },
  SESSION_LEASE_LOST: {
    retriable: true,
    message:
      "Another host owns this session now (it took the session over); nothing was written. Retry: the owner serves it.",
  },
  HOST_ID_IN_USE: {
    retriable: false,
    message:
      "A host with this PI_HOST_ID is running (its heartbeat advances): this process did not start. Give each host its own PI_HOST_ID.",
  },
  PERMISSION_INTERRUPTED: {
    retriable: false,
    message: "The permission prompt was denied because its turn was aborted or the host restarted (fence).",
  },
  PLAN_REQUIRES_INTERACTIVE_SESSION: {
    retriable: false,
    message:
      "A scheduled or unattended run of a Plan task is refused before anything is created; switch the task to Agent.",
  },
  SCHEDULED_TASK_NOT_FOUND: { retriable: false, message: "No scheduled task with that id." },
  REPLY_TOO_LARGE: {
    retriable: false,
    message:
      "The reply would exceed the bus's message bound (the server's max_payload) and was not sent; what the request did is recorded.",
  },
  DATABASE_UNAVAILABLE: {
    retriable: true,
    message:
      "The host lost its database connection during the request; nothing was committed unless the reply says otherwise. Retry.",
  },
  HOST_SHUTTING_DOWN: {
    retriable: true,
    message:
      "The host is draining after SIGTERM/SIGINT: it takes no new request (those it was already handling finish); retry, another host (or this one restarted) serves it.",
  },
  HOST_UNAVAILABLE: {
    retriable: true,
    message:
      "The host that owns the session did not answer the forwarded request in time, or is dead or stopped (a takeover is coming); whether it served the request is unknown: retry (with the same idempotency key).",
  },
  HOST_STOPPING: {
    retriable: false,
    message:
      "The host was stopped (SIGTERM/SIGINT) while the turn ran: the turn is aborted, its execution interrupted (PLAN_EXECUTION_INTERRUPTED); nothing is replayed.",
  },
  WORKER_STOPPED: {
    retriable: false,
    message:
      "The worker running the turn was stopped (SIGTERM/SIGINT): the turn is aborted, its execution interrupted (PLAN_EXECUTION_INTERRUPTED); no other worker takes it.",
  },
  TOOL_OUTCOME_UNKNOWN: {
    retriable: false,
    message:
      "The tool call was started earlier and its result was never recorded (the host stopped or failed to record it); whether it ran is unknown, and it is never run again.",
  },
  PROVIDER_UNAUTHORIZED: {
    retriable: false,
    message:
      "The model provider refused the worker's credentials (HTTP 401/403): the key in the deployment's models.json or environment is missing or wrong.",
  },
  PROVIDER_RATE_LIMITED: {
    retriable: true,
    message:
      "The model provider kept answering 429 after the worker's bounded retries (which honour retry-after).",
  },
  PROVIDER_UNREACHABLE: {
    retriable: true,
    message: "The model provider could not be reached (connection refused, DNS, timeout).",
  },
  PROVIDER_ERROR: {
    retriable: true,
    message: "The model provider failed (HTTP 5xx or a broken stream); its message is the turn's reason.",
  },
  CONTEXT_TOO_LARGE: {
    retriable: false,
    message:
      "The conversation exceeds the model's context window; compact it (new_context) or use a model with a larger window.",
  },
  MODEL_NOT_CONFIGURED: {
    retriable: false,
    message:
      "No worker's models.json or pi's built-in models has this provider and model, or its key is not configured.",
  },
};

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(errorCodeInfo, value);
}
