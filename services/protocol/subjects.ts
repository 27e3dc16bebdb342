// Every NATS subject of the bus contract (docs/protocol.md). Nothing else builds subject strings.

export const PROTOCOL_VERSION = 1;

/** Client request: `<prefix>.rpc.<principal>.<method>`. */
export function rpcSubject(prefix: string, principal: string, method: string): string {
  return `${prefix}.rpc.${principal}.${method}`;
}

/** What the host subscribes to for client requests (any principal, any method). */
export function rpcWildcard(prefix: string): string {
  return `${prefix}.rpc.>`;
}

/** Parses `<prefix>.rpc.<principal>.<method...>`; null when the subject is not one. */
export function parseRpcSubject(
  prefix: string,
  subject: string,
): { principal: string; method: string } | null {
  const head = `${prefix}.rpc.`;
  if (!subject.startsWith(head)) return null;
  const rest = subject.slice(head.length);
  const dot = rest.indexOf(".");
  if (dot <= 0 || dot === rest.length - 1) return null;
  return { principal: rest.slice(0, dot), method: rest.slice(dot + 1) };
}

/** Agent-worker subjects: `<prefix>.agent.<name>` (claim, context, append, heartbeat, tools.execute, ...). */
export function agentSubject(prefix: string, name: AgentMethod | "offer" | "hello"): string {
  return `${prefix}.agent.${name}`;
}

/** Cancel notice for one turn, published by the host when it aborts a turn. */
export function turnCancelSubject(prefix: string, turnId: string): string {
  return `${prefix}.agent.cancel.${turnId}`;
}

/** Session events: `<prefix>.evt.<principal>.<sessionId>.<type>`. */
export function eventSubject(prefix: string, principal: string, sessionId: string, type: string): string {
  return `${prefix}.evt.${principal}.${sessionId}.${type}`;
}

/** Every event of one session as seen by one principal. */
export function sessionEventsWildcard(prefix: string, principal: string, sessionId: string): string {
  return `${prefix}.evt.${principal}.${sessionId}.>`;
}

export function eventWildcard(prefix: string): string {
  return `${prefix}.evt.>`;
}

/** A plugin tool call, host -> plugin process: `<prefix>.plugin.<pluginId>.<tool>`. */
export function pluginSubject(prefix: string, pluginId: string, tool: string): string {
  return `${prefix}.plugin.${pluginId}.${tool}`;
}

/** Every tool of one plugin (what a plugin process subscribes to). */
export function pluginWildcard(prefix: string, pluginId: string): string {
  return `${prefix}.plugin.${pluginId}.*`;
}

/** Test hooks (PI_TEST_HOOKS=1 only): `<prefix>.test.<name>`. */
export function testSubject(prefix: string, name: string): string {
  return `${prefix}.test.${name}`;
}

/** Principals and ids become subject tokens: only these characters are accepted. */
export const SUBJECT_TOKEN = /^[A-Za-z0-9_-]{1,64}$/;

/** Settings and scheduled-task methods, served by services/host/scheduling-api.ts. */
export const SCHEDULING_METHODS = [
  "settings.get",
  "settings.set",
  "scheduled.create",
  "scheduled.list",
  "scheduled.update",
  "scheduled.delete",
  "scheduled.run",
  "scheduled.runs",
] as const;
export type SchedulingMethod = (typeof SCHEDULING_METHODS)[number];

/** Permission prompt methods, served by services/host/permissions-api.ts. */
export const PERMISSION_METHODS = ["permissions.pending", "permissions.resolve"] as const;
export type PermissionMethod = (typeof PERMISSION_METHODS)[number];

/** Plugin registry methods, served by services/host/plugins-api.ts. */
export const PLUGIN_METHODS = [
  "plugins.register",
  "plugins.list",
  "plugins.enable",
  "plugins.disable",
] as const;
export type PluginMethod = (typeof PLUGIN_METHODS)[number];

/** Project methods, served by services/host/projects-api.ts. */
export const PROJECT_METHODS = ["projects.create", "projects.get", "projects.configure"] as const;
export type ProjectMethod = (typeof PROJECT_METHODS)[number];

export const CLIENT_METHODS = [
  "host.hello",
  "host.status",
  ...PROJECT_METHODS,
  "session.create",
  "session.get",
  "session.list",
  "session.configure",
  "session.prompt",
  "session.abort",
  "plans.pending",
  "plans.get",
  "plans.resolve",
  "artifacts.read",
  ...SCHEDULING_METHODS,
  ...PERMISSION_METHODS,
  ...PLUGIN_METHODS,
] as const;
/** Methods served by services/host/client-api.ts (every client method but the project, scheduling, permission and plugin ones). */
export type ClientMethod = Exclude<
  (typeof CLIENT_METHODS)[number],
  ProjectMethod | SchedulingMethod | PermissionMethod | PluginMethod
>;

export const AGENT_METHODS = [
  "claim",
  "context",
  "append",
  "heartbeat",
  "tools.execute",
  "turn.end",
] as const;
export type AgentMethod = (typeof AGENT_METHODS)[number];

export const WORKER_QUEUE = "workers";
export const HOST_QUEUE = "hosts";
export const HOST_SERVICE_NAME = "pi-host";
