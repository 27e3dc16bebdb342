// A production-mode pi-host for one test file: a nats-server running exactly what `pihost
// nats-config` generates for a small team (optionally with its WebSocket listener), a host without
// PI_DEV_MODE on its generated users, and a real agent worker process under its own NATS user.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { generateNatsConfig } from "../../services/cli/nats-config.ts";
import { parseTeam, type Secrets } from "../../services/cli/nats-team.ts";
import { inboxPrefix } from "../../services/protocol/subjects.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./processes.ts";
import type { Stack } from "./stack.ts";
import { freePort, type PrivateNats, startPrivateNats } from "./test-nats.ts";

/** The team file's one host, which is also its PI_HOST_ID. */
export const TEAM_HOST_ID = "host";

export interface TeamStack {
  nats: PrivateNats;
  secrets: Secrets;
  /** ws://127.0.0.1:<port> when a websocket listener was asked for. */
  wsUrl: string | null;
  host: ManagedProcess;
  worker: ManagedProcess;
  /** A NATS connection as `user` (its password from the secrets), on its own inbox prefix. */
  as(user: string): Promise<NatsConnection>;
  stop(): Promise<void>;
}

export async function startTeamStack(
  stack: Stack,
  opts: { people: string[]; websocketOrigins?: string[] },
): Promise<TeamStack> {
  const prefix = stack.env.prefix;
  const dir = path.join(stack.dir, "team-nats");
  mkdirSync(dir, { recursive: true });
  const wsPort = opts.websocketOrigins ? await freePort() : null;
  const team = parseTeam(
    JSON.stringify({
      prefix,
      listen: "127.0.0.1:4222",
      maxPayload: "8MB",
      hosts: [TEAM_HOST_ID],
      workers: ["w1"],
      people: opts.people,
      ...(wsPort !== null
        ? { websocket: { listen: `127.0.0.1:${wsPort}`, allowedOrigins: opts.websocketOrigins, noTls: true } }
        : {}),
    }),
  );
  const out = await generateNatsConfig(team, { bcryptCost: 4 });
  const configFile = path.join(dir, "nats.conf");
  writeFileSync(configFile, out.config);
  const secrets = out.secrets;
  const person = opts.people[0]!;
  const nats = await startPrivateNats({ user: person, pass: secrets.users[person]! }, { configFile });
  const env: Record<string, string | undefined> = {
    ...hostEnv({ ...stack.env, natsUrl: nats.url }),
    NATS_USER: "host",
    NATS_PASSWORD: secrets.users.host,
    // The team file's host name is its id (its serving user may subscribe only to its own worker subjects).
    PI_HOST_ID: TEAM_HOST_ID,
    PI_NATS_RPC_USER: "host-rpc",
    PI_NATS_RPC_PASSWORD: secrets.users["host-rpc"],
    // Production mode: the scripted test model only because it is listed, and named as the default.
    PI_MODEL_PROVIDERS: "scripted",
    PI_DEFAULT_MODEL: "scripted/demo",
  };
  delete env.PI_DEV_MODE;
  delete env.PI_TEST_HOOKS;
  const host = spawnTs("services/host/main.ts", env);
  const worker = spawnTs("services/agent/main.ts", {
    NATS_URL: nats.url,
    PI_PREFIX: prefix,
    NATS_USER: "w1",
    NATS_PASSWORD: secrets.users.w1,
  });
  const conns: NatsConnection[] = [];
  const stop = async () => {
    for (const nc of conns) if (!nc.isClosed()) await nc.close();
    await Promise.all([worker.stop(), host.stop()]);
    await nats.stop();
  };
  try {
    await Promise.all([host.waitForEvent("host.ready", 60_000), worker.waitForEvent("worker.ready", 60_000)]);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    nats,
    secrets,
    wsUrl: wsPort !== null ? `ws://127.0.0.1:${wsPort}` : null,
    host,
    worker,
    async as(user) {
      const nc = await connect({
        servers: nats.url,
        user,
        pass: secrets.users[user]!,
        inboxPrefix: inboxPrefix(user),
        name: `team-stack ${user}`,
      });
      conns.push(nc);
      return nc;
    },
    stop,
  };
}
