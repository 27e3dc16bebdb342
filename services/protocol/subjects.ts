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

/**
 * The worker subjects every host shares: `<prefix>.agent.offer` (host -> workers, queue group),
 * `.hello` (worker -> hosts) and `.rollcall` (host -> workers). A worker's requests go to one host's
 * own subjects instead (`workerHostSubject`).
 */
export function agentSubject(prefix: string, name: "offer" | "hello" | "rollcall"): string {
  return `${prefix}.agent.${name}`;
}

/**
 * A worker's request to the host that owns the turn, `<prefix>.agent.host.<hostId>.<method>`
 * (docs/protocol.md "Agent-worker protocol"): the offer names that host, and every call of the turn
 * (claim included) goes there, never through another host.
 */
export function workerHostSubject(prefix: string, hostId: string, method: AgentMethod): string {
  return `${prefix}.agent.host.${hostId}.${method}`;
}

/** Every worker request to one host (what that host's serving user subscribes to). */
export function workerHostWildcard(prefix: string, hostId: string): string {
  return `${prefix}.agent.host.${hostId}.>`;
}

/** Worker requests to any host (what a worker may publish, one method a pattern). */
export function workerAnyHostSubject(prefix: string, method: AgentMethod): string {
  return `${prefix}.agent.host.*.${method}`;
}

/**
 * A stopping worker's goodbye, `<prefix>.agent.goodbye.<workerId>`: under its own id, so a worker can
 * say goodbye only for itself; hosts drop it from workers.list and models.list at once.
 */
export function workerGoodbyeSubject(prefix: string, workerId: string): string {
  return `${prefix}.agent.goodbye.${workerId}`;
}

/** Every worker's goodbye (what hosts subscribe to). */
export function workerGoodbyeWildcard(prefix: string): string {
  return `${prefix}.agent.goodbye.*`;
}

/**
 * Cancel notice for one turn, published by the host when it revokes a turn: under the worker that
 * holds it, so a worker may subscribe only to its own turns' cancels (`<prefix>.agent.cancel.<worker>.>`).
 */
export function turnCancelSubject(prefix: string, workerId: string, turnId: string): string {
  return `${prefix}.agent.cancel.${workerId}.${turnId}`;
}

/** Every cancel of one worker's turns (what its NATS user may subscribe to). */
export function workerCancelWildcard(prefix: string, workerId: string): string {
  return `${prefix}.agent.cancel.${workerId}.>`;
}

/**
 * A person's or worker's private inbox prefix, `_INBOX_<name>` (the nats.js connection option
 * `inboxPrefix`): replies to their requests go only under it (docs/security.md, "The bus").
 */
export function inboxPrefix(name: string): string {
  return `_INBOX_${name}`;
}

/** The shared inbox prefix of NATS clients that set none; the host answers it in development mode only. */
export const SHARED_INBOX_PREFIX = "_INBOX";

/** Session events: `<prefix>.evt.<principal>.<sessionId>.<type>`. */
export function eventSubject(prefix: string, principal: string, sessionId: string, type: string): string {
  return `${prefix}.evt.${principal}.${sessionId}.${type}`;
}

/**
 * Live model output of one session for one principal, `<prefix>.live.<principal>.<sessionId>.delta`:
 * published as it arrives, kept by no stream and numbered by no event sequence (docs/protocol.md
 * "Live output"); the durable `message` event follows.
 */
export function liveSubject(prefix: string, principal: string, sessionId: string): string {
  return `${prefix}.live.${principal}.${sessionId}.delta`;
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

/** Test hooks (PI_TEST_HOOKS=1 only): `<prefix>.test.<name>`, served by any one host. */
export function testSubject(prefix: string, name: string): string {
  return `${prefix}.test.${name}`;
}

/** The same test hooks of one host, `<prefix>.testhost.<hostId>.<name>` (each host has its own clock). */
export function hostTestSubject(prefix: string, hostId: string, name: string): string {
  return `${prefix}.testhost.${hostId}.${name}`;
}

/**
 * A request forwarded to the host that owns its session, `<prefix>.host.fwd.<hostId>` (docs/protocol.md
 * "Several hosts"); only host users may publish or subscribe under `<prefix>.host.>`.
 */
export function hostForwardSubject(prefix: string, hostId: string): string {
  return `${prefix}.host.fwd.${hostId}`;
}

/** Where the owner answers one forwarded request: `<prefix>.host.reply.<forwarderHostId>.<id>`. */
export function hostForwardReplySubject(prefix: string, hostId: string, id: string): string {
  return `${prefix}.host.reply.${hostId}.${id}`;
}

/** Every host-to-host subject (what host users, and only they, may publish and subscribe). */
export function hostWildcard(prefix: string): string {
  return `${prefix}.host.>`;
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
