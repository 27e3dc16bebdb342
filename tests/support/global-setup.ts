// vitest globalSetup of the integration project: chooses Postgres and NATS once (test-services.ts)
// and hands every test file, and every process it starts, their URLs as DATABASE_URL / NATS_URL.
import { resolveTestServices } from "./test-services.ts";

export default async function setup(): Promise<() => Promise<void>> {
  const services = await resolveTestServices();
  process.env.DATABASE_URL = services.databaseUrl;
  process.env.NATS_URL = services.natsUrl;
  if (services.plan.postgres.from === "container" || services.plan.nats.from === "container")
    console.log(`test services from testcontainers: ${services.databaseUrl} ${services.natsUrl}`);
  return () => services.stop();
}
