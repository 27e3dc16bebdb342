// Every NATS subject of the bus contract (docs/protocol.md). Nothing else builds subject strings.

import type { AgentMethod, ClientApiMethod } from "./methods.ts";

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

/** Principals and ids become subject tokens: only these characters are accepted (tokens.ts). */
export { SUBJECT_TOKEN } from "./tokens.ts";

// The method names are types here; their lists (CLIENT_METHODS, AGENT_METHODS, ...) are derived from
// the one METHODS table in methods.ts, which loads TypeBox (the CLI imports this file at start).
export type {
  AgentMethod,
  ClientApiMethod,
  PermissionMethod,
  PluginMethod,
  ProjectMethod,
  SchedulingMethod,
} from "./methods.ts";
/**
 * @deprecated The client-api.ts subset under its old name; methods.ts's `ClientMethod` is every
 * client method. Use `ClientApiMethod`.
 */
export type ClientMethod = ClientApiMethod;

export const WORKER_QUEUE = "workers";
export const HOST_QUEUE = "hosts";
export const HOST_SERVICE_NAME = "pi-host";

/** The JetStream stream that keeps a prefix's session events (`pi` -> `PI_EVENTS`), unless PI_STREAM names another. */
export function eventStreamName(prefix: string): string {
  return `${prefix.toUpperCase().replace(/-/g, "_")}_EVENTS`;
}
