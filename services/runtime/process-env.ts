// Environment settings every pi-host process reads the same way (host, agent worker). A doubtful
// value refuses to start: production needs NATS credentials, development mode is explicit.

import { PREFIX_TOKEN } from "../protocol/tokens.ts";

export const DEFAULT_NATS_URL = "nats://127.0.0.1:4222";

export function positiveIntEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

export interface BusEnv {
  natsUrl: string;
  natsUser: string | undefined;
  natsPassword: string | undefined;
  devMode: boolean;
  prefix: string;
}

/** NATS URL, credentials or explicit development mode, and the subject prefix. */
export function readBusEnv(env: NodeJS.ProcessEnv, processName: string): BusEnv {
  const devMode = env.PI_DEV_MODE === "1";
  const natsUser = env.NATS_USER || undefined;
  if (!devMode && !natsUser) {
    throw new Error(
      `${processName} needs NATS credentials (NATS_USER/NATS_PASSWORD) or an explicit development mode (PI_DEV_MODE=1)`,
    );
  }
  const prefix = env.PI_PREFIX || "pi";
  if (!PREFIX_TOKEN.test(prefix)) throw new Error(`PI_PREFIX must be one subject token, got ${prefix}`);
  return {
    natsUrl: env.NATS_URL || DEFAULT_NATS_URL,
    natsUser,
    natsPassword: env.NATS_PASSWORD || undefined,
    devMode,
    prefix,
  };
}
