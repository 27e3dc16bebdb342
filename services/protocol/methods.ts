// The METHODS table: every client method (`<prefix>.rpc.<principal>.<method>`) and agent-worker method
// (`<prefix>.agent.<method>`) with its params and result schemas, who may call it, how the session it
// concerns is found and its documented refusals. The host decodes and routes by it; clients take their
// types from it; docs/protocol.md is checked against it (tests/protocol-doc.test.ts).
import type { Static, TSchema } from "typebox";
import {
  AppendParams,
  AppendResult,
  BodyPartParams,
  BodyPartResult,
  DeltaParams,
  DeltaResult,
  ClaimParams,
  ContextPage,
  ContextParams,
  HeartbeatParams,
  HeartbeatResult,
  ToolExecuteResult,
  ToolsExecuteParams,
  TurnAssignment,
  TurnEndParams,
  TurnEndResult,
} from "./agent-schemas.ts";
import { AuditListParams, AuditPage } from "./audit-schemas.ts";
import type { ErrorCode } from "./error-codes.ts";
import {
  PermissionRequestList,
  PermissionRequestView,
  PermissionsPendingParams,
  PermissionsResolveParams,
} from "./permission-schemas.ts";
import { PluginList, PluginRef, PluginsRegisterParams, PluginView } from "./plugin-schemas.ts";
import {
  ProjectCreateParams,
  ProjectLeft,
  ProjectList,
  ProjectRef,
  ProjectsConfigureParams,
  ProjectsListParams,
  ProjectView,
} from "./project-schemas.ts";
import {
  ScheduledCreateParams,
  ScheduledDeleted,
  ScheduledRunList,
  ScheduledRunsParams,
  ScheduledRunView,
  ScheduledTaskList,
  ScheduledTaskRef,
  ScheduledTaskView,
  ScheduledUpdateParams,
  SettingsSetParams,
  SettingsView,
} from "./scheduling-schemas.ts";
import {
  AbortResult,
  AfterPageParams,
  ArtifactContent,
  ArtifactsReadPageParams,
  ArtifactsReadParams,
  EmptyParams,
  EventsPage,
  EventsSinceParams,
  HelloParams,
  HelloResult,
  ModelList,
  HostStatus,
  PlansHistoryParams,
  PlansPendingParams,
  PlansResolveParams,
  ProjectMemberParams,
  ProjectMembersListParams,
  ProjectMembersView,
  PromptResult,
  ProposalHistoryPage,
  ProposalList,
  ProposalView,
  SessionConfigureParams,
  SessionCreateParams,
  SessionList,
  SessionListParams,
  SessionPromptParams,
  SessionRef,
  SessionView,
  WorkerList,
} from "./schemas.ts";

/**
 * Who may call a method: a person on `<prefix>.rpc.<principal>.*` or an agent worker on `<prefix>.agent.*`.
 * `gate` is the documented check: `any` principal; the session's (task's, project's) `owner`; an
 * `approver` (owner or approver); a `member` of the project; a settings `admin` (PI_SETTINGS_ADMINS,
 * any principal in development mode); a worker's turn `token`, checked before the params; `none` for
 * a worker's claim.
 */
export interface MethodSpec {
  caller: "person" | "worker";
  /** The handler file that serves it (services/host/bus/<group>-api.ts). */
  group: "client" | "projects" | "scheduling" | "permissions" | "plugins" | "audit" | "events" | "agent";
  gate: "any" | "owner" | "approver" | "member" | "admin" | "token" | "none";
  params: TSchema;
  result: TSchema;
  /** The request field that names (or leads to) the session the request concerns. */
  session: "sessionId" | "proposalId" | "requestId" | "turnId" | null;
  /** The refusals docs/protocol.md lists for it (besides INVALID_PARAMS and INTERNAL). */
  refusals: readonly ErrorCode[];
}

function person<G extends MethodSpec["group"], A extends MethodSpec["gate"], S extends MethodSpec["session"]>(
  group: G,
  gate: A,
  session: S,
  refusals: readonly ErrorCode[] = [],
) {
  return { caller: "person" as const, group, gate, session, refusals };
}

function worker<A extends "token" | "none">(gate: A, refusals: readonly ErrorCode[]) {
  return { caller: "worker" as const, group: "agent" as const, gate, session: "turnId" as const, refusals };
}

const TOKEN = ["TURN_TOKEN_INVALID"] as const;

export const METHODS = {
  "host.hello": {
    ...person("client", "any", null, ["PROTOCOL_MISMATCH"]),
    params: HelloParams,
    result: HelloResult,
  },
  "host.status": { ...person("client", "any", null), params: EmptyParams, result: HostStatus },
  "models.list": { ...person("client", "any", null), params: EmptyParams, result: ModelList },
  // The lists are keyset pages (docs/protocol.md "Lists and pages"): `limit`, `after` or `before`, `next`.
  "workers.list": { ...person("client", "any", null), params: AfterPageParams, result: WorkerList },
  "projects.create": {
    ...person("projects", "any", null, [
      "WORKSPACE_NOT_ALLOWED",
      "PROJECT_ROOT_OVERLAPS",
      "WORKSPACE_NOT_USABLE",
    ]),
    params: ProjectCreateParams,
    result: ProjectView,
  },
  "projects.get": {
    ...person("projects", "member", null, ["PROJECT_NOT_FOUND", "FORBIDDEN"]),
    params: ProjectRef,
    result: ProjectView,
  },
  "projects.list": { ...person("projects", "any", null), params: ProjectsListParams, result: ProjectList },
  "projects.members.list": {
    ...person("projects", "member", null, ["PROJECT_NOT_FOUND", "FORBIDDEN"]),
    params: ProjectMembersListParams,
    result: ProjectMembersView,
  },
  "projects.members.add": {
    ...person("projects", "owner", null, ["PROJECT_NOT_FOUND", "FORBIDDEN"]),
    params: ProjectMemberParams,
    result: ProjectMembersView,
  },
  "projects.members.remove": {
    ...person("projects", "owner", null, ["PROJECT_NOT_FOUND", "FORBIDDEN"]),
    params: ProjectMemberParams,
    result: ProjectMembersView,
  },
  "projects.leave": {
    ...person("projects", "member", null, ["PROJECT_NOT_FOUND", "FORBIDDEN", "PROJECT_OWNER_CANNOT_LEAVE"]),
    params: ProjectRef,
    result: ProjectLeft,
  },
  "projects.configure": {
    ...person("projects", "admin", null, ["FORBIDDEN", "PROJECT_NOT_FOUND", "PROJECT_VERSION_CONFLICT"]),
    params: ProjectsConfigureParams,
    result: ProjectView,
  },
  "session.create": {
    ...person("client", "member", null, ["PROJECT_NOT_FOUND", "FORBIDDEN", "MODEL_NOT_CONFIGURED"]),
    params: SessionCreateParams,
    result: SessionView,
  },
  "session.get": {
    ...person("client", "approver", "sessionId", ["SESSION_NOT_FOUND", "FORBIDDEN"]),
    params: SessionRef,
    result: SessionView,
  },
  "session.list": { ...person("client", "any", null), params: SessionListParams, result: SessionList },
  "session.configure": {
    ...person("client", "owner", "sessionId", ["PLAN_CONFIGURATION_BLOCKED", "MODEL_NOT_CONFIGURED"]),
    params: SessionConfigureParams,
    result: SessionView,
  },
  "session.prompt": {
    ...person("client", "owner", "sessionId", ["AGENT_BUSY"]),
    params: SessionPromptParams,
    result: PromptResult,
  },
  "session.abort": {
    ...person("client", "approver", "sessionId", [
      "TURN_ABORTED",
      "PLAN_APPROVAL_INTERRUPTED",
      "PLAN_EXECUTION_INTERRUPTED",
    ]),
    params: SessionRef,
    result: AbortResult,
  },
  "plans.pending": {
    ...person("client", "approver", "sessionId"),
    params: PlansPendingParams,
    result: ProposalList,
  },
  // Every status, newest first, paged by a keyset cursor; expiry applied as plans.pending does.
  "plans.history": {
    ...person("client", "approver", "sessionId", ["SESSION_NOT_FOUND", "FORBIDDEN"]),
    params: PlansHistoryParams,
    result: ProposalHistoryPage,
  },
  "plans.get": {
    ...person("client", "approver", "proposalId", ["PLAN_NOT_FOUND", "FORBIDDEN"]),
    params: ArtifactsReadParams,
    result: ProposalView,
  },
  "plans.resolve": {
    ...person("client", "approver", "proposalId", [
      "PLAN_NOT_FOUND",
      "FORBIDDEN",
      "PLAN_APPROVAL_STALE",
      "PLAN_INVALID_ACTION",
      "PLAN_PERMISSION_MODE_REQUIRED",
      "PLAN_PERMISSION_MODE_INVALID",
      "PLAN_ALREADY_RESOLVED",
      "PLAN_ARTIFACT_HASH_MISMATCH",
      "PLAN_APPROVAL_TIMEOUT",
      "PLAN_APPROVAL_CONFLICT",
    ]),
    params: PlansResolveParams,
    result: ProposalView,
  },
  "artifacts.read": {
    ...person("client", "approver", "proposalId", [
      "PLAN_NOT_FOUND",
      "FORBIDDEN",
      "FILE_NOT_FOUND",
      "FILE_NOT_READABLE",
      "PLAN_ARTIFACT_PATH_UNSAFE",
    ]),
    params: ArtifactsReadPageParams,
    result: ArtifactContent,
  },
  "audit.list": { ...person("audit", "any", null), params: AuditListParams, result: AuditPage },
  "settings.get": { ...person("scheduling", "any", null), params: EmptyParams, result: SettingsView },
  "settings.set": {
    ...person("scheduling", "admin", null, ["FORBIDDEN"]),
    params: SettingsSetParams,
    result: SettingsView,
  },
  "scheduled.create": {
    ...person("scheduling", "any", null, ["PROJECT_NOT_FOUND", "FORBIDDEN", "MODEL_NOT_CONFIGURED"]),
    params: ScheduledCreateParams,
    result: ScheduledTaskView,
  },
  "scheduled.list": {
    ...person("scheduling", "any", null),
    params: AfterPageParams,
    result: ScheduledTaskList,
  },
  "scheduled.update": {
    ...person("scheduling", "owner", null, [
      "SCHEDULED_TASK_NOT_FOUND",
      "FORBIDDEN",
      "PROJECT_NOT_FOUND",
      "MODEL_NOT_CONFIGURED",
    ]),
    params: ScheduledUpdateParams,
    result: ScheduledTaskView,
  },
  "scheduled.delete": {
    ...person("scheduling", "owner", null, ["SCHEDULED_TASK_NOT_FOUND", "FORBIDDEN"]),
    params: ScheduledTaskRef,
    result: ScheduledDeleted,
  },
  "scheduled.run": {
    ...person("scheduling", "owner", null, [
      "SCHEDULED_TASK_NOT_FOUND",
      "FORBIDDEN",
      "PLAN_REQUIRES_INTERACTIVE_SESSION",
      "MODEL_NOT_CONFIGURED",
    ]),
    params: ScheduledTaskRef,
    result: ScheduledRunView,
  },
  "scheduled.runs": {
    ...person("scheduling", "owner", null, ["SCHEDULED_TASK_NOT_FOUND", "FORBIDDEN"]),
    params: ScheduledRunsParams,
    result: ScheduledRunList,
  },
  "permissions.pending": {
    ...person("permissions", "approver", "sessionId", ["SESSION_NOT_FOUND", "FORBIDDEN"]),
    params: PermissionsPendingParams,
    result: PermissionRequestList,
  },
  "permissions.resolve": {
    ...person("permissions", "approver", "requestId", [
      "PERMISSION_NOT_FOUND",
      "FORBIDDEN",
      "PERMISSION_TIMEOUT",
      "PERMISSION_ALREADY_RESOLVED",
    ]),
    params: PermissionsResolveParams,
    result: PermissionRequestView,
  },
  "plugins.register": {
    ...person("plugins", "admin", null, ["FORBIDDEN"]),
    params: PluginsRegisterParams,
    result: PluginView,
  },
  "plugins.list": { ...person("plugins", "any", null), params: AfterPageParams, result: PluginList },
  "plugins.enable": {
    ...person("plugins", "admin", null, ["PLUGIN_NOT_FOUND", "FORBIDDEN"]),
    params: PluginRef,
    result: PluginView,
  },
  "plugins.disable": {
    ...person("plugins", "admin", null, ["PLUGIN_NOT_FOUND", "FORBIDDEN"]),
    params: PluginRef,
    result: PluginView,
  },
  // Caller-wide (any principal sees the events of sessions it may read now); a named session is
  // checked as session.get checks it.
  "events.since": {
    ...person("events", "approver", "sessionId", ["SESSION_NOT_FOUND", "FORBIDDEN"]),
    params: EventsSinceParams,
    result: EventsPage,
  },
  claim: {
    ...worker("none", ["TURN_NOT_CLAIMABLE", "PLAN_EXECUTION_STALE", "PLAN_ARTIFACT_HASH_MISMATCH"]),
    params: ClaimParams,
    result: TurnAssignment,
  },
  context: { ...worker("token", TOKEN), params: ContextParams, result: ContextPage },
  append: { ...worker("token", TOKEN), params: AppendParams, result: AppendResult },
  heartbeat: { ...worker("token", TOKEN), params: HeartbeatParams, result: HeartbeatResult },
  "tools.execute": {
    ...worker("token", [...TOKEN, "HOST_OVERLOADED"]),
    params: ToolsExecuteParams,
    result: ToolExecuteResult,
  },
  "turn.end": { ...worker("token", TOKEN), params: TurnEndParams, result: TurnEndResult },
  // Streamed model output, published live to people (docs/protocol.md "Live output").
  delta: { ...worker("token", TOKEN), params: DeltaParams, result: DeltaResult },
  // One part of a body too big for one message; the request then names it (docs/protocol.md).
  "body.part": {
    ...worker("token", [...TOKEN, "INVALID_PARAMS", "HOST_OVERLOADED"]),
    params: BodyPartParams,
    result: BodyPartResult,
  },
} as const satisfies Record<string, MethodSpec>;

export type Method = keyof typeof METHODS;
type Spec<M extends Method> = (typeof METHODS)[M];
/** Every client method (called by a person). */
export type ClientMethod = { [M in Method]: Spec<M>["caller"] extends "person" ? M : never }[Method];
/** Every agent-worker method. */
export type AgentMethod = { [M in Method]: Spec<M>["caller"] extends "worker" ? M : never }[Method];
/** The methods one handler file serves. */
export type MethodOfGroup<G extends MethodSpec["group"]> = {
  [M in Method]: Spec<M>["group"] extends G ? M : never;
}[Method];
export type ParamsOf<M extends Method> = Static<Spec<M>["params"]>;
export type ResultOf<M extends Method> = Static<Spec<M>["result"]>;

/** The table entry of a method name from the wire, or undefined (own keys only). */
export function methodSpec(name: string): MethodSpec | undefined {
  return Object.hasOwn(METHODS, name) ? (METHODS as Record<string, MethodSpec>)[name] : undefined;
}

function namesWhere(test: (spec: MethodSpec) => boolean): string[] {
  return Object.entries(METHODS as Record<string, MethodSpec>)
    .filter(([, spec]) => test(spec))
    .map(([name]) => name);
}

/** Every client method, in table order. */
export const CLIENT_METHODS = namesWhere((s) => s.caller === "person") as readonly ClientMethod[];
/** Every agent-worker method, in table order. */
export const AGENT_METHODS = namesWhere((s) => s.caller === "worker") as readonly AgentMethod[];
export function methodsOfGroup<G extends MethodSpec["group"]>(group: G): readonly MethodOfGroup<G>[] {
  return namesWhere((s) => s.group === group) as MethodOfGroup<G>[];
}
export const SCHEDULING_METHODS = methodsOfGroup("scheduling");
export const PERMISSION_METHODS = methodsOfGroup("permissions");
export const PLUGIN_METHODS = methodsOfGroup("plugins");
export const PROJECT_METHODS = methodsOfGroup("projects");
export type ClientApiMethod = MethodOfGroup<"client">;
export type SchedulingMethod = MethodOfGroup<"scheduling">;
export type AuditMethod = MethodOfGroup<"audit">;
export type EventsMethod = MethodOfGroup<"events">;
export type PermissionMethod = MethodOfGroup<"permissions">;
export type PluginMethod = MethodOfGroup<"plugins">;
export type ProjectMethod = MethodOfGroup<"projects">;
