// The host's configuration, read once from the environment (docs/operations.md lists every variable).
// Anything doubtful refuses to start: production needs NATS credentials, development mode is explicit.
import os from "node:os";
import path from "node:path";

export interface HostConfig {
  databaseUrl: string | undefined;
  natsUrl: string;
  natsUser: string | undefined;
  natsPassword: string | undefined;
  devMode: boolean;
  prefix: string;
  streamName: string;
  dataDir: string;
  workspaceRoots: string[];
  testHooks: boolean;
  hostId: string;
  leaseMs: number;
  heartbeatMs: number;
  offerIntervalMs: number;
  approvalTimeoutMs: number;
}

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";
export const DEFAULT_PG_PROBE_URL = "postgres://postgres@127.0.0.1:5432/postgres";

function intEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

export function readHostConfig(env: NodeJS.ProcessEnv = process.env): HostConfig {
  const devMode = env.PI_DEV_MODE === "1";
  const natsUser = env.NATS_USER || undefined;
  if (!devMode && !natsUser) {
    throw new Error(
      "pi-host needs NATS credentials (NATS_USER/NATS_PASSWORD) or an explicit development mode (PI_DEV_MODE=1)",
    );
  }
  const prefix = env.PI_PREFIX || "pi";
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(prefix))
    throw new Error(`PI_PREFIX must be one subject token, got ${prefix}`);
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
    databaseUrl: env.DATABASE_URL || undefined,
    natsUrl: env.NATS_URL || DEFAULT_NATS_URL,
    natsUser,
    natsPassword: env.NATS_PASSWORD || undefined,
    devMode,
    prefix,
    streamName: env.PI_STREAM || `${prefix.toUpperCase().replace(/-/g, "_")}_EVENTS`,
    dataDir,
    workspaceRoots: roots,
    testHooks: env.PI_TEST_HOOKS === "1",
    hostId:
      env.PI_HOST_ID ||
      `host-${os
        .hostname()
        .replace(/[^A-Za-z0-9_-]/g, "_")
        .slice(0, 40)}`,
    leaseMs: intEnv(env, "PI_TURN_LEASE_MS", 15_000),
    heartbeatMs: intEnv(env, "PI_TURN_HEARTBEAT_MS", 3_000),
    offerIntervalMs: intEnv(env, "PI_OFFER_INTERVAL_MS", 500),
    approvalTimeoutMs: 30 * 60 * 1000,
  };
}
