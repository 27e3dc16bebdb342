// Where the tests find Postgres and NATS: DATABASE_URL / NATS_URL, else the local defaults when they
// answer, else containers started with testcontainers when a Docker engine is reachable, else an error.
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import type { StartedTestContainer } from "testcontainers";

export const LOCAL_DATABASE_URL = "postgres://postgres@127.0.0.1:5432/postgres";
export const LOCAL_NATS_URL = "nats://127.0.0.1:4222";
export const POSTGRES_IMAGE = "postgres:16";
export const NATS_IMAGE = "nats:2.10";

export type ServiceSource = { from: "env" | "local"; url: string } | { from: "container" };
export interface ServicesPlan {
  postgres: ServiceSource;
  nats: ServiceSource;
}
export interface ServicesInput {
  env: { DATABASE_URL?: string | undefined; NATS_URL?: string | undefined };
  /** Whether the local defaults (LOCAL_DATABASE_URL, LOCAL_NATS_URL) answer. */
  localAnswers: { postgres: boolean; nats: boolean };
  dockerReachable: boolean;
}

/** The three ways to give the tests their services, named in the one error message. */
export function noServicesMessage(missing: string[]): string {
  return [
    `No ${missing.join(" and ")} for the tests. Either:`,
    "  1. set DATABASE_URL and NATS_URL to a Postgres (a role that may CREATE DATABASE) and a NATS",
    "     server with JetStream (e.g. those of `docker compose up -d postgres nats`), or",
    "  2. run them locally: Postgres on 127.0.0.1:5432 (user postgres, no password) and NATS on",
    "     127.0.0.1:4222 with -js (as .ci/run starts them), or",
    "  3. make a Docker engine reachable (DOCKER_HOST or /var/run/docker.sock), and the tests start",
    `     ${POSTGRES_IMAGE} and ${NATS_IMAGE} -js with testcontainers.`,
  ].join("\n");
}

/** Pure: which source each service comes from, or the one message naming the three options. */
export function planTestServices(
  input: ServicesInput,
): { ok: true; plan: ServicesPlan } | { ok: false; message: string } {
  const pick = (envUrl: string | undefined, localUrl: string, answers: boolean): ServiceSource | null => {
    if (envUrl) return { from: "env", url: envUrl };
    if (answers) return { from: "local", url: localUrl };
    if (input.dockerReachable) return { from: "container" };
    return null;
  };
  const postgres = pick(input.env.DATABASE_URL, LOCAL_DATABASE_URL, input.localAnswers.postgres);
  const nats = pick(input.env.NATS_URL, LOCAL_NATS_URL, input.localAnswers.nats);
  if (postgres && nats) return { ok: true, plan: { postgres, nats } };
  const missing = [...(postgres ? [] : ["Postgres"]), ...(nats ? [] : ["NATS"])];
  return { ok: false, message: noServicesMessage(missing) };
}

export async function postgresAnswers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

export async function natsAnswers(url: string): Promise<boolean> {
  try {
    const nc = await connect({ servers: url, reconnect: false, timeout: 2000 });
    await nc.close();
    return true;
  } catch {
    return false;
  }
}

export async function dockerReachable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import("testcontainers");
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

export interface TestServices {
  databaseUrl: string;
  natsUrl: string;
  plan: ServicesPlan;
  stop(): Promise<void>;
}

/** Starts the containers the plan asks for (needs a Docker engine; not exercised where none is). */
export async function startContainers(plan: ServicesPlan): Promise<TestServices> {
  const started: StartedTestContainer[] = [];
  const stop = async () => {
    await Promise.all(started.splice(0).map((c) => c.stop()));
  };
  try {
    // Loaded only when a container is due: most runs use the environment or the local services.
    const { GenericContainer, Wait } = await import("testcontainers");
    const { PostgreSqlContainer } = await import("@testcontainers/postgresql");
    let databaseUrl = plan.postgres.from === "container" ? "" : plan.postgres.url;
    let natsUrl = plan.nats.from === "container" ? "" : plan.nats.url;
    if (plan.postgres.from === "container") {
      const c = await new PostgreSqlContainer(POSTGRES_IMAGE)
        .withUsername("postgres")
        .withDatabase("postgres")
        .start();
      started.push(c);
      databaseUrl = c.getConnectionUri();
    }
    if (plan.nats.from === "container") {
      const c = await new GenericContainer(NATS_IMAGE)
        .withCommand(["-js"])
        .withExposedPorts(4222)
        .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
        .start();
      started.push(c);
      natsUrl = `nats://${c.getHost()}:${c.getMappedPort(4222)}`;
    }
    return { databaseUrl, natsUrl, plan, stop };
  } catch (err) {
    await stop().catch(() => {});
    throw new Error("starting the test services with testcontainers failed", { cause: err });
  }
}

/** The impure side of planTestServices: probes only what the choice needs, then starts containers. */
export async function resolveTestServices(
  env: ServicesInput["env"] = process.env,
  probe = { postgres: postgresAnswers, nats: natsAnswers, docker: dockerReachable },
): Promise<TestServices> {
  const localAnswers = {
    postgres: env.DATABASE_URL ? false : await probe.postgres(LOCAL_DATABASE_URL),
    nats: env.NATS_URL ? false : await probe.nats(LOCAL_NATS_URL),
  };
  let choice = planTestServices({ env, localAnswers, dockerReachable: false });
  if (!choice.ok) choice = planTestServices({ env, localAnswers, dockerReachable: await probe.docker() });
  if (!choice.ok) throw new Error(choice.message);
  return startContainers(choice.plan);
}
