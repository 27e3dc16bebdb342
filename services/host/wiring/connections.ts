// The host's two NATS connections (docs/architecture.md "Host start-up"): `nc` for events, offers,
// cancels, plugin calls and host-to-host forwarding, and `rpcNc`, whose user may publish only into
// inboxes, for the requests it serves (docs/security.md "The bus"). Outside development mode a
// server that checks no credentials is refused before anything else is touched.
import type { NatsConnection } from "@nats-io/nats-core";
import { connect } from "@nats-io/transport-node";
import type { Logger } from "../../runtime/log.ts";
import { inboxPrefix } from "../../protocol/subjects.ts";
import type { HostConfig } from "../host-config.ts";

export interface BusConnections {
  nc: NatsConnection;
  rpcNc: NatsConnection;
  /** Whether the event connection is up now (host.status, /readyz); a reconnect brings it back. */
  natsUp(): boolean;
}

export async function connectBus(config: HostConfig, log: Logger): Promise<BusConnections> {
  if (config.devMode) {
    log.warn("host.dev_mode", {
      message:
        "DEVELOPMENT MODE: NATS without authentication; the principal in each subject is taken as given. Do not expose this host.",
    });
  }
  const nc = await connect({
    servers: config.natsUrl,
    name: `pi-host ${config.hostId}`,
    maxReconnectAttempts: -1,
    // Plugin and JetStream replies come back under the host's own prefix (its user's inbox).
    ...(config.natsUser ? { inboxPrefix: inboxPrefix(config.natsUser) } : {}),
    ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword ?? "" } : {}),
  });
  // A bus that checks no credentials lets anyone act as anyone: refused before the database is
  // touched (the refusal changes nothing).
  if (!config.devMode && nc.info?.auth_required !== true) {
    log.error("host.nats_unauthenticated", {
      natsUrl: config.natsUrl.replace(/\/\/[^@/]*@/, "//"),
      message:
        "the NATS server does not require authentication, so any connection could act as any person or worker; run nats-server with the authenticated configuration (docs/operations.md) or, for development only, set PI_DEV_MODE=1",
    });
    await nc.close().catch(() => {});
    process.exit(2);
  }
  const rpcUser = config.natsRpcUser
    ? { user: config.natsRpcUser, pass: config.natsRpcPassword ?? "" }
    : config.natsUser
      ? { user: config.natsUser, pass: config.natsPassword ?? "" }
      : {};
  if (!config.devMode && !config.natsRpcUser)
    log.warn("host.nats_rpc_user_missing", {
      message:
        "requests are served with NATS_USER, which may publish events and cancels too; set PI_NATS_RPC_USER/PI_NATS_RPC_PASSWORD (pihost nats-config writes that user)",
    });
  const rpcNc = await connect({
    servers: config.natsUrl,
    name: `pi-host ${config.hostId} rpc`,
    maxReconnectAttempts: -1,
    ...rpcUser,
  });
  let up = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") up = false;
      else if (s.type === "reconnect") up = true;
    }
  })();
  return { nc, rpcNc, natsUp: () => up && !nc.isClosed() };
}

/** Closes both connections, for a host that exits before it serves. */
export async function closeBus(bus: Pick<BusConnections, "nc" | "rpcNc">): Promise<void> {
  await Promise.all([bus.nc.close().catch(() => {}), bus.rpcNc.close().catch(() => {})]);
}
