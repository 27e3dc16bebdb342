// How the host stops (docs/operations.md "Stop"): on SIGTERM or SIGINT it drains (new requests are
// refused HOST_SHUTTING_DOWN, those in flight finish), runs the stop fence (what runs ends now,
// announced; nothing is replayed at the next start) and exits 0. A newer incarnation of its id
// (the writer's first refused write) stops it at once, committing nothing more: exit 3.
import type { Service } from "@nats-io/services";
import type { Logger } from "../../runtime/log.ts";
import { errorFields } from "../../runtime/log.ts";
import type { Clock } from "../clock.ts";
import type { HostConfig } from "../host-config.ts";
import type { HttpListener } from "../http-listener.ts";
import type { DrainGate } from "../bus/drain-gate.ts";
import { announceEndedWork } from "../sessions/events/fence-announce.ts";
import type { Db } from "../store/db.ts";
import type { startHostLiveness } from "../store/host-liveness.ts";
import { type FenceReport, runStopFence } from "../store/startup-fence.ts";
import type { BusConnections } from "./connections.ts";
import type { WriterParts } from "./fence.ts";
import type { ModelsAndSchedules, Stores, Supervision } from "./sessions.ts";

/** How long a drain waits for the requests in flight at SIGTERM before it ends them (HOST_SHUTTING_DOWN). */
const DRAIN_GRACE_MS = 3_000;

export interface StopDeps {
  config: HostConfig;
  db: Db;
  clock: Clock;
  log: Logger;
  fence: FenceReport;
  bus: BusConnections;
  drain: DrainGate;
  notices: WriterParts["notices"];
  stores: Stores;
  supervision: Supervision;
  models: ModelsAndSchedules;
  liveness: ReturnType<typeof startHostLiveness>;
  service: Service;
  http: HttpListener | null;
}

/** Wires SIGTERM, SIGINT and the writer's `fenced` notice; `stopping()` says whether one began. */
export function handleStops(deps: StopDeps): { stopping: () => boolean } {
  let stopping = false;
  const { log, drain, stores, supervision } = deps;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // From here every new request is refused with a retriable HOST_SHUTTING_DOWN (the service stays
    // subscribed, so none goes unanswered); those in flight finish and are replied to.
    drain.start();
    log.info("host.stopping", { signal, inFlight: drain.inFlight() });
    // A stopping host takes nobody over; its heartbeat may stop too (the stop fence marks it
    // stopped, and without that commit the others take its sessions after one lease).
    deps.liveness.stop();
    deps.models.scheduler.stop();
    const drained = await drain.idle(DRAIN_GRACE_MS);
    // The workers of leased turns are told to stop them; actors stop.
    stores.dispatcher.revokeAll();
    stores.dispatcher.stop();
    supervision.supervisor.stopAll();
    // Turns end HOST_STOPPING, executions and approvals are interrupted, prompts denied; the same
    // commit marks the host row `stopped`, so another host takes its sessions over at once.
    await runStopFence({
      db: deps.db,
      clock: deps.clock,
      hostId: deps.config.hostId,
      incarnation: deps.fence.incarnation,
      log,
    })
      .then((ended) => announceEndedWork({ plans: stores.plans, events: stores.events, log }, ended))
      .catch((err) => log.warn("host.stop_fence_failed", errorFields(err)));
    // A request still waiting (on an actor that stopped) is answered HOST_SHUTTING_DOWN, then the
    // service unsubscribes: later requests go to another host of the queue group (or no responders).
    if (!(await drain.idle(500))) drain.cut();
    await drain.idle(500);
    log.info("host.drained", { drainedInGrace: drained, inFlight: drain.inFlight() });
    await deps.service.stop().catch(() => {});
    await deps.http?.close().catch(() => {});
    await supervision.runner.close().catch(() => {});
    await supervision.workspaceLocks.close().catch(() => {});
    await stores.events.flush().catch(() => {});
    await deps.bus.rpcNc.drain().catch(() => {});
    await deps.bus.nc.drain().catch(() => {});
    await deps.db.end().catch(() => {});
    process.exit(0);
  };
  deps.notices.on("fenced", (message) => {
    if (stopping) return;
    stopping = true;
    supervision.killTools("fenced");
    log.error("host.fenced", { hostId: deps.config.hostId, incarnation: deps.fence.incarnation, message });
    deps.liveness.stop();
    deps.models.scheduler.stop();
    stores.dispatcher.stop();
    void deps.service.stop().catch(() => {});
    supervision.supervisor.stopAll();
    // Time for the HOST_FENCED replies already sent to leave; exit code 3 says "superseded".
    setTimeout(() => process.exit(3), 200);
  });
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
  return { stopping: () => stopping };
}
