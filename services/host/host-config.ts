// The host's configuration, read once from the environment (docs/operations.md lists every variable).
// Anything doubtful refuses to start: production needs NATS credentials, development mode is explicit.
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { DEFAULT_NATS_URL, positiveIntEnv, readBusEnv } from "../runtime/process-env.ts";
import { SUBJECT_TOKEN } from "../protocol/subjects.ts";
import {
  openAccess,
  ownFolderAccess,
  parseWorkspaceAccess,
  type WorkspaceAccess,
} from "./tools/workspace-grants.ts";
import { forwardTimeoutMs } from "./bus/forward.ts";
import { hostLivenessConfig } from "./store/host-liveness.ts";
import { type ToolRunnerConfig, toolRunnerConfigFromEnv } from "./tools/tool-runner.ts";
import { parseDefaultModel } from "./sessions/turns/model-choice.ts";
import { formatListenAddress, parseListenAddress } from "./http-listener.ts";

export interface HostConfig {
  /** DATABASE_URL, else the local default; the host never starts a database (that is `npm start`). */
  databaseUrl: string;
  natsUrl: string;
  natsUser: string | undefined;
  natsPassword: string | undefined;
  /**
   * The NATS user of the connection that serves requests (PI_NATS_RPC_USER/PASSWORD): it may only
   * answer into inboxes, while NATS_USER publishes events, offers and cancels. Unset: NATS_USER's.
   */
  natsRpcUser: string | undefined;
  natsRpcPassword: string | undefined;
  devMode: boolean;
  prefix: string;
  dataDir: string;
  workspaceRoots: string[];
  /**
   * Which folders each person may open as a project: the PI_WORKSPACE_ACCESS file; without it,
   * development mode every folder under every root, production `<root>/<principal>` only.
   */
  workspaceAccess: WorkspaceAccess;
  testHooks: boolean;
  /** Test hooks only: deliberately break one host guard, to prove the model-based test notices. */
  testBreakGuard: string | undefined;
  hostId: string;
  leaseMs: number;
  heartbeatMs: number;
  offerIntervalMs: number;
  approvalTimeoutMs: number;
  /** How long a permission prompt waits for a person before it is a denial (PERMISSION_TIMEOUT). */
  permissionTimeoutMs: number;
  /** tools.execute calls running at once on this host, and per session; over either: HOST_OVERLOADED. */
  toolsMaxConcurrent: number;
  toolsMaxPerSession: number;
  /** Supervision: more than this many actor failures of one session within the window degrade it. */
  actorMaxRestarts: number;
  actorRestartWindowMs: number;
  /** An idle session actor without requests for this long is stopped; rows stay the truth. */
  passivateAfterMs: number;
  /** A scheduled occurrence more than this far in the past is recorded missed, not run late. */
  scheduleGraceMs: number;
  /** Longest wait of the scheduler between two looks at the task table. */
  schedulePollMs: number;
  /** PI_DEFAULT_MODEL (`provider/model`): what a session that names no model runs. */
  defaultModel: { provider: string; model: string } | null;
  /** PI_MODEL_PROVIDERS: the providers sessions may use (null: any; scripted only in dev mode). */
  modelProviders: string[] | null;
  /** Production: principals that may change the app settings (`settings.set`); dev mode: anyone. */
  settingsAdmins: string[];
  /** The tool runner's settings (sandbox, Bash default timeout): read here, once, never per call. */
  tools: ToolRunnerConfig;
  /** PI_HOST_LEASE_MS and PI_HOST_HEARTBEAT_MS: how long a host row lives without a beat, and how often it beats. */
  liveness: { leaseMs: number; heartbeatMs: number };
  /** PI_FORWARD_TIMEOUT_MS: the longest a person's request forwarded to another host waits (bus/forward.ts). */
  forwardTimeoutMs: number;
  /**
   * PI_SANDBOX_GRANT_ACL: projects.create grants the sandbox user access to a workspace it cannot
   * use through POSIX ACLs (tools/workspace-access.ts); off, such a workspace is WORKSPACE_NOT_USABLE.
   */
  sandboxGrantAcl: boolean;
  /** PI_HTTP_LISTEN: the health and metrics listener (`host:port`), null when `off`. */
  httpListen: { host: string; port: number } | null;
  /** PI_HTTP_BLOCK: the other hosts' listeners (`host:port`, comma-separated), blocked to previews. */
  httpBlock: string[];
}

/** An on/off variable: 1/true/on, 0/false/off or unset; anything else refuses to start. */
function flagEnv(env: NodeJS.ProcessEnv, name: string): boolean {
  const v = (env[name] ?? "").trim().toLowerCase();
  if (v === "1" || v === "true" || v === "on") return true;
  if (v === "" || v === "0" || v === "false" || v === "off") return false;
  throw new Error(`${name} must be 1 or 0 (got ${JSON.stringify(env[name])})`);
}

export { DEFAULT_NATS_URL };
/** The host's database when DATABASE_URL is unset: database `pihost` on the local Postgres. */
export const DEFAULT_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/pihost";

/** PI_WORKSPACE_ACCESS read and checked once at start: an unreadable or bad file stops the host. */
function readWorkspaceAccess(env: NodeJS.ProcessEnv, roots: string[], devMode: boolean): WorkspaceAccess {
  const file = env.PI_WORKSPACE_ACCESS;
  if (!file) return devMode ? openAccess(roots) : ownFolderAccess(roots);
  const source = path.resolve(file);
  let text: string;
  try {
    text = readFileSync(source, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? "unreadable";
    throw new Error(`PI_WORKSPACE_ACCESS (${source}) cannot be read: ${code}`, { cause: err });
  }
  return parseWorkspaceAccess(text, roots, source);
}

export function readHostConfig(env: NodeJS.ProcessEnv = process.env): HostConfig {
  const { devMode, prefix, ...bus } = readBusEnv(env, "pi-host");
  const dataDir = path.resolve(env.PI_DATA_DIR || ".pihost-data");
  const roots = (
    env.PI_WORKSPACE_ROOTS || (devMode ? [path.join(dataDir, "workspaces"), os.tmpdir()].join(":") : "")
  )
    .split(":")
    .filter(Boolean)
    .map((r) => path.resolve(r));
  if (roots.length === 0)
    throw new Error("PI_WORKSPACE_ROOTS must name at least one folder projects may live under");
  return {
    databaseUrl: env.DATABASE_URL || DEFAULT_DATABASE_URL,
    ...bus,
    natsRpcUser: env.PI_NATS_RPC_USER || undefined,
    natsRpcPassword: env.PI_NATS_RPC_PASSWORD || undefined,
    devMode,
    prefix,
    dataDir,
    workspaceRoots: roots,
    workspaceAccess: readWorkspaceAccess(env, roots, devMode),
    testHooks: env.PI_TEST_HOOKS === "1",
    testBreakGuard: env.PI_TEST_HOOKS === "1" ? env.PI_TEST_BREAK_GUARD || undefined : undefined,
    hostId: hostIdOf(env),
    leaseMs: positiveIntEnv(env, "PI_TURN_LEASE_MS", 15_000),
    heartbeatMs: positiveIntEnv(env, "PI_TURN_HEARTBEAT_MS", 3_000),
    offerIntervalMs: positiveIntEnv(env, "PI_OFFER_INTERVAL_MS", 500),
    approvalTimeoutMs: 30 * 60 * 1000,
    permissionTimeoutMs: positiveIntEnv(env, "PI_PERMISSION_TIMEOUT_MS", 120_000),
    toolsMaxConcurrent: positiveIntEnv(env, "PI_TOOLS_MAX_CONCURRENT", 64),
    toolsMaxPerSession: positiveIntEnv(env, "PI_TOOLS_MAX_PER_SESSION", 4),
    actorMaxRestarts: positiveIntEnv(env, "PI_ACTOR_MAX_RESTARTS", 3),
    actorRestartWindowMs: positiveIntEnv(env, "PI_ACTOR_RESTART_WINDOW_MS", 60_000),
    passivateAfterMs: positiveIntEnv(env, "PI_PASSIVATE_AFTER_MS", 60_000),
    scheduleGraceMs: positiveIntEnv(env, "PI_SCHEDULE_GRACE_MS", 60_000),
    schedulePollMs: positiveIntEnv(env, "PI_SCHEDULE_POLL_MS", 5_000),
    defaultModel: parseDefaultModel(env.PI_DEFAULT_MODEL),
    modelProviders: env.PI_MODEL_PROVIDERS
      ? env.PI_MODEL_PROVIDERS.split(",")
          .map((s) => s.trim())
          .filter(Boolean)
      : null,
    settingsAdmins: (env.PI_SETTINGS_ADMINS || "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
    tools: toolRunnerConfigFromEnv(env),
    liveness: hostLivenessConfig(env),
    forwardTimeoutMs: forwardTimeoutMs(env),
    sandboxGrantAcl: flagEnv(env, "PI_SANDBOX_GRANT_ACL"),
    httpListen: httpListenOf(env),
    httpBlock: (env.PI_HTTP_BLOCK || "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .map((a) => formatListenAddress(parseListenAddress(a))),
  };
}

/** The health and metrics listener: loopback by default, `off` disables it, a bad address refuses. */
function httpListenOf(env: NodeJS.ProcessEnv): { host: string; port: number } | null {
  const v = (env.PI_HTTP_LISTEN ?? "").trim();
  if (v.toLowerCase() === "off") return null;
  return parseListenAddress(v || "127.0.0.1:9464");
}

/**
 * PI_HOST_ID (one subject token: it names the host's own worker and forward subjects), else the
 * host's NATS user (the generated NATS configuration lets host H's serving user subscribe only to
 * `<prefix>.agent.host.H.>`, so the two must agree), else from the host name.
 */
function hostIdOf(env: NodeJS.ProcessEnv): string {
  const given = env.PI_HOST_ID || (env.NATS_USER && SUBJECT_TOKEN.test(env.NATS_USER) ? env.NATS_USER : "");
  if (given) {
    if (!SUBJECT_TOKEN.test(given))
      throw new Error(
        `PI_HOST_ID must be one subject token ([A-Za-z0-9_-], 1-64), got ${JSON.stringify(given)}`,
      );
    return given;
  }
  return `host-${os
    .hostname()
    .replace(/[^A-Za-z0-9_-]/g, "_")
    .slice(0, 40)}`;
}
