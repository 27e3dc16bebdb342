// vitest globalSetup of the integration project: chooses Postgres and NATS once (test-services.ts)
// and hands every test file, and every process it starts, their URLs as DATABASE_URL / NATS_URL.
// It also builds the host, the worker and `pihost` once into .test-dist/ (services/tools/build.ts,
// the production build without the web console): processes.ts starts those bundles with plain node,
// which is what the image runs and skips tsx compiling the whole tree at every start (about 2 s of
// CPU each, and the suite starts a few hundred). The build is made fresh for every run, so a test
// never runs code older than the sources.
import path from "node:path";
import { buildAll } from "../../services/tools/build.ts";
import { REPO_ROOT, TEST_DIST } from "./processes.ts";
import { migrateUp } from "../../services/host/store/migrate.ts";
import { createMigratedTemplate, TEMPLATE_ENV } from "./test-db.ts";
import { resolveTestServices } from "./test-services.ts";

export default async function setup(): Promise<() => Promise<void>> {
  // Both projects (integration, solo) run this setup in the one vitest process: one build and one
  // template database serve both.
  const shared = globalThis as { pihostTestBuild?: Promise<void>; pihostTemplate?: Promise<Template> };
  shared.pihostTestBuild ??= buildAll({ web: false, outDir: path.join(REPO_ROOT, TEST_DIST) });
  const [services] = await Promise.all([resolveTestServices(), shared.pihostTestBuild]);
  process.env.DATABASE_URL = services.databaseUrl;
  process.env.NATS_URL = services.natsUrl;
  if (services.plan.postgres.from === "container" || services.plan.nats.from === "container")
    console.log(`test services from testcontainers: ${services.databaseUrl} ${services.natsUrl}`);
  // Migrated once: a stack's database is a copy of it (test-db.ts), so a file's first host does not
  // run every migration again (about 0.3 s of the host's and Postgres's time, in each of 150 files).
  shared.pihostTemplate ??= createMigratedTemplate(services.databaseUrl, (databaseUrl) =>
    migrateUp({ databaseUrl }),
  );
  const template = await shared.pihostTemplate;
  process.env[TEMPLATE_ENV] = template.name;
  return async () => {
    await template.drop().catch(() => {});
    await services.stop();
  };
}

type Template = Awaited<ReturnType<typeof createMigratedTemplate>>;
