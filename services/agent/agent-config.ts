// The agent worker's configuration, read once from the environment (docs/operations.md lists every
// variable). Like the host it refuses to start without NATS credentials or an explicit dev mode.
import { randomBytes } from "node:crypto";
import { type BusEnv, DEFAULT_NATS_URL, positiveIntEnv, readBusEnv } from "../runtime/process-env.ts";
import { SUBJECT_TOKEN } from "../protocol/subjects.ts";
import { loadModelsConfig, type ModelRegistry } from "./models-config.ts";

export interface AgentWorkerConfig extends BusEnv {
  workerId: string;
  concurrency: number;
  /** Where the scripted provider appends one JSON line per model call; undefined = no log. */
  scriptedCallLog: string | undefined;
  /** The model catalogue: pi-ai's built-ins, with PI_MODELS_JSON's providers over them. */
  models: ModelRegistry;
}

export { DEFAULT_NATS_URL };
export const DEFAULT_CONCURRENCY = 4;

/** Reads the worker's settings and its models.json; throws (refusing to start) on anything doubtful. */
export function readAgentConfig(env: NodeJS.ProcessEnv = process.env): AgentWorkerConfig {
  const bus = readBusEnv(env, "pi-host agent worker");
  // Outside development mode the worker's bus identity is its NATS user: its inbox (`_INBOX_<id>`)
  // and its turns' cancel subjects are the ones that user may subscribe to (docs/security.md).
  const workerId = env.PI_WORKER_ID || bus.natsUser || `worker-${randomBytes(6).toString("hex")}`;
  if (!SUBJECT_TOKEN.test(workerId)) {
    throw new Error(`PI_WORKER_ID must match ${SUBJECT_TOKEN.source}, got ${JSON.stringify(workerId)}`);
  }
  if (!bus.devMode && bus.natsUser && workerId !== bus.natsUser) {
    throw new Error(
      `PI_WORKER_ID (${workerId}) must be the worker's NATS user (${bus.natsUser}) outside development mode: replies and cancels reach a worker only under its own name; leave PI_WORKER_ID unset`,
    );
  }
  return {
    ...bus,
    workerId,
    concurrency: positiveIntEnv(env, "PI_WORKER_CONCURRENCY", DEFAULT_CONCURRENCY),
    scriptedCallLog: env.PI_SCRIPTED_CALL_LOG || undefined,
    models: loadModelsConfig(env.PI_MODELS_JSON || undefined, env),
  };
}
