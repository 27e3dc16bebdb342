// The agent worker's configuration, read once from the environment (docs/operations.md lists every
// variable). Like the host it refuses to start without NATS credentials or an explicit dev mode.
import { randomBytes } from "node:crypto";
import { SUBJECT_TOKEN } from "../protocol/subjects.ts";

export interface AgentWorkerConfig {
  natsUrl: string;
  natsUser: string | undefined;
  natsPassword: string | undefined;
  devMode: boolean;
  prefix: string;
  workerId: string;
  concurrency: number;
  /** Where the scripted provider appends one JSON line per model call; undefined = no log. */
  scriptedCallLog: string | undefined;
}

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";
export const DEFAULT_CONCURRENCY = 4;

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** Reads the worker's settings; throws (refusing to start) on anything doubtful. */
export function readAgentConfig(env: NodeJS.ProcessEnv = process.env): AgentWorkerConfig {
  const devMode = env.PI_DEV_MODE === "1";
  const natsUser = env.NATS_USER || undefined;
  if (!devMode && !natsUser) {
    throw new Error(
      "pi-host agent worker needs NATS credentials (NATS_USER/NATS_PASSWORD) or an explicit development mode (PI_DEV_MODE=1)",
    );
  }
  const prefix = env.PI_PREFIX || "pi";
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(prefix))
    throw new Error(`PI_PREFIX must be one subject token, got ${prefix}`);
  const workerId = env.PI_WORKER_ID || `worker-${randomBytes(6).toString("hex")}`;
  if (!SUBJECT_TOKEN.test(workerId)) {
    throw new Error(`PI_WORKER_ID must match ${SUBJECT_TOKEN.source}, got ${JSON.stringify(workerId)}`);
  }
  return {
    natsUrl: env.NATS_URL || DEFAULT_NATS_URL,
    natsUser,
    natsPassword: env.NATS_PASSWORD || undefined,
    devMode,
    prefix,
    workerId,
    concurrency: positiveInt(env, "PI_WORKER_CONCURRENCY", DEFAULT_CONCURRENCY),
    scriptedCallLog: env.PI_SCRIPTED_CALL_LOG || undefined,
  };
}
