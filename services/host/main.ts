// pi-host entry (docs/architecture.md "Host start-up"): connect NATS, migrate (advisory-locked),
// run the startup fence, build the session side, and only then subscribe. Wiring only: each step
// is a function of services/host/wiring/. Development mode (no NATS auth) is explicit and announced.
import { readFileSync } from "node:fs";
import path from "node:path";
import { createLogger, errorFields } from "../runtime/log.ts";
import { agentSubject } from "../protocol/subjects.ts";
import { createClock } from "./clock.ts";
import { readHostConfig } from "./host-config.ts";
import { notReady } from "./http-listener.ts";
import { createDrainGate } from "./bus/drain-gate.ts";
import { reportOrphanArtifacts } from "./store/orphan-artifacts.ts";
import { clientHandlers } from "./wiring/client-handlers.ts";
import { closeBus, connectBus } from "./wiring/connections.ts";
import { migrateAndFence, openWriter } from "./wiring/fence.ts";
import { reportSandbox } from "./wiring/sandbox-report.ts";
import { listenHttp, readinessChecks, serveBus } from "./wiring/serve.ts";
import {
  buildModelsAndSchedules,
  buildStores,
  buildSupervision,
  buildToolPipeline,
  watchLiveness,
} from "./wiring/sessions.ts";
import { handleStops } from "./wiring/shutdown.ts";

const log = createLogger("host");

/** Whether the host serves yet: readiness says not ready until it does. */
interface ServingState {
  serving: boolean;
}

/** Connect, migrate and fence, then build the session side; nothing is subscribed yet. */
async function build() {
  const config = readHostConfig();
  const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8"));
  // NATS first: outside development mode a bus that checks no credentials is refused before the
  // database is touched.
  const bus = await connectBus(config, log);
  const clock = createClock();
  const fence = await migrateAndFence({
    config,
    clock,
    log,
    version: pkg.version,
    onInUse: () => closeBus(bus),
  });
  const { db, metrics, notices } = openWriter(config, fence, log);
  const core = { config, db, nc: bus.nc, clock, log };

  const stores = await buildStores(core, fence);
  const supervision = buildSupervision({ ...core, stores, metrics });
  const liveness = watchLiveness({
    ...core,
    fence,
    stores,
    metrics,
    killTools: supervision.killTools,
    superseded: (message) => notices.emit("fenced", message),
  });
  const models = buildModelsAndSchedules({ ...core, stores, supervisor: supervision.supervisor });
  // What the host sends is bounded by the server's max_payload, read from the connection
  // (docs/protocol.md "Message bounds").
  const maxPayload = bus.rpcNc.info?.max_payload ?? 1024 * 1024;
  const sandbox = await reportSandbox(config.tools.sandbox, log);
  const tools = buildToolPipeline({ ...core, stores, supervision, metrics, maxPayload });
  return {
    config,
    version: pkg.version as string,
    bus,
    fence,
    db,
    metrics,
    notices,
    core,
    stores,
    supervision,
    liveness,
    models,
    maxPayload,
    sandbox,
    tools,
  };
}

/** What start-up built before the host serves: the bus connections, the fenced writer and the session side. */
type Built = Awaited<ReturnType<typeof build>>;

/** The health listener, the client handlers and the bus service, and the stops that end them. */
async function serve(b: Built, state: ServingState) {
  const { config, db, core, bus, metrics, stores, supervision, models, maxPayload } = b;
  const { clock } = core;
  // The health, readiness and metrics listener, from the fence on; ready once serving.
  const drain = createDrainGate();
  const readiness = readinessChecks({
    db,
    bus,
    drain,
    sandboxAvailable: b.sandbox.available,
    serving: () => state.serving,
  });
  const http = await listenHttp({ config, readiness, metrics, log });
  const handlers = clientHandlers({
    config,
    db,
    clock,
    stores,
    supervision,
    models,
    metrics,
    natsUp: bus.natsUp,
    readiness: () => notReady(readiness),
    maxPayload,
  });
  const service = await serveBus({
    ...core,
    version: b.version,
    bus,
    drain,
    metrics,
    stores,
    supervision,
    models,
    handlers,
    tools: b.tools,
    maxPayload,
  });
  const stops = handleStops({
    ...core,
    fence: b.fence,
    bus,
    drain,
    notices: b.notices,
    stores,
    supervision,
    models,
    liveness: b.liveness,
    service,
    http,
  });
  return { service, stops };
}

/** Schedules and pruning start, workers are called, and the host says it is ready. */
async function goLive(b: Built, state: ServingState): Promise<void> {
  const { config, db, bus, stores, supervision, models, maxPayload } = b;
  await models.scheduler.start();
  stores.events.startPruning();
  await bus.nc.flush();
  await bus.rpcNc.flush();
  // Every worker says hello again (what it serves: models.list) now that this host listens.
  bus.nc.publish(agentSubject(config.prefix, "rollcall"));
  state.serving = true;
  log.info("host.ready", {
    hostId: config.hostId,
    prefix: config.prefix,
    devMode: config.devMode,
    maxPayload,
  });
  // Plan files no row names (a crash between file and row), listed by a sandboxed helper per
  // workspace: after the host serves, so a slow listing never delays start. Reporting only.
  void reportOrphanArtifacts({
    db,
    log,
    hostId: config.hostId,
    listPlanFiles: (root) => supervision.runner.listPlanFiles(root),
  }).catch((err) => log.warn("host.orphan_artifacts_failed", errorFields(err)));
}

async function main(): Promise<void> {
  const built = await build();
  const state: ServingState = { serving: false };
  const { service, stops } = await serve(built, state);
  // A service stopped by an error (say, a subscription the server refused) answers nothing more:
  // that is not a host that may keep running.
  void service.stopped.then((err) => {
    if (stops.stopping()) return;
    log.error("host.service_stopped", err ? errorFields(err) : {});
    process.exit(1);
  });
  await goLive(built, state);
}

main().catch((err) => {
  log.error("host.failed", errorFields(err));
  process.exit(1);
});
