// Finds or starts the Postgres and NATS a development pi-host needs (postgres.ts, nats.ts): configured
// URL, else a local server on the default port, else one started under the data folder. Only `npm
// start` uses this; the host takes its database and NATS from its configuration.
export const DEFAULT_PG_PROBE_URL = "postgres://postgres@127.0.0.1:5432/postgres";
export const DEFAULT_NATS_PROBE_URL = "nats://127.0.0.1:4222";

/** The probe URLs of `npm start` (PI_PG_PROBE_URL, PI_NATS_PROBE_URL). */
export function probeUrlsFromEnv(env: NodeJS.ProcessEnv = process.env): {
  pgProbeUrl: string;
  natsProbeUrl: string;
} {
  return {
    pgProbeUrl: env.PI_PG_PROBE_URL || DEFAULT_PG_PROBE_URL,
    natsProbeUrl: env.PI_NATS_PROBE_URL || DEFAULT_NATS_PROBE_URL,
  };
}

export { findNatsServer, NATS_INSTALL_HINT, resolveNats } from "./nats.ts";
export { PIHOST_DATABASE, resolvePostgres } from "./postgres.ts";
export { freeLoopbackPort, type ResolvedService, redactUrl } from "./resolved-service.ts";
