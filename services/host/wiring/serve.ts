// Serving: the health, readiness and metrics listener (PI_HTTP_LISTEN) and the host's service on
// the bus (bus/host-bus.ts) with every handler, the forwarding to other hosts and the worker
// bookkeeping (docs/architecture.md "Host start-up").
import type { Logger } from "../../runtime/log.ts";
import { errorFields } from "../../runtime/log.ts";
import type { Clock } from "../clock.ts";
import type { HostConfig } from "../host-config.ts";
import {
  formatListenAddress,
  type HttpListener,
  type Readiness,
  startHttpListener,
  within,
} from "../http-listener.ts";
import type { HostMetricsRegistry } from "../metrics.ts";
import { createAgentApi, workerOfRequest } from "../bus/agent-api.ts";
import { afterEvents } from "../bus/events-api.ts";
import { createForwarding } from "../bus/forward.ts";
import { createGate } from "../bus/gates.ts";
import type { DrainGate } from "../bus/drain-gate.ts";
import { startHostBus } from "../bus/host-bus.ts";
import { createRefusalRecorder } from "../bus/reply-rules.ts";
import { createLiveOutput } from "../sessions/events/live-output.ts";
import type { ToolPipeline } from "../sessions/pipeline/tool-pipeline.ts";
import { appendAudit } from "../store/audit-log.ts";
import type { Db } from "../store/db.ts";
import { ownerOfRequest } from "../store/request-session.ts";
import type { clientHandlers } from "./client-handlers.ts";
import type { BusConnections } from "./connections.ts";
import type { ModelsAndSchedules, Stores, Supervision } from "./sessions.ts";

/** What /readyz checks (host.status reports the same list); `serving` is set once the bus is served. */
export function readinessChecks(deps: {
  db: Db;
  bus: BusConnections;
  drain: DrainGate;
  sandboxAvailable: boolean;
  serving: () => boolean;
}): Readiness {
  return {
    database: () => within(1_000, () => deps.db.query("SELECT 1").then(() => true)),
    nats: () => deps.bus.natsUp() && !deps.bus.rpcNc.isClosed(),
    serving: deps.serving,
    draining: () => deps.drain.draining,
    sandbox: () => deps.sandboxAvailable,
  };
}

/**
 * The listener, from the fence on. One that cannot bind (the port is taken) is said loudly and the
 * host serves the bus anyway: probes of /healthz then fail, which is what an operator sees.
 */
export async function listenHttp(deps: {
  config: HostConfig;
  readiness: Readiness;
  metrics: Pick<HostMetricsRegistry, "scrape">;
  log: Logger;
}): Promise<HttpListener | null> {
  const { log } = deps;
  const listen = deps.config.httpListen;
  if (!listen) return null;
  const http = await startHttpListener({
    listen,
    readiness: deps.readiness,
    scrape: () => deps.metrics.scrape(),
    onError: (err) => log.warn("host.http_failed", errorFields(err)),
  }).catch((err) => {
    log.error("host.http_unavailable", {
      address: formatListenAddress(listen),
      ...errorFields(err),
      message: "the health and metrics listener did not start (PI_HTTP_LISTEN); the bus is served",
    });
    return null;
  });
  if (http) log.info("host.http_listening", { address: formatListenAddress(http.address) });
  return http;
}

export function serveBus(deps: {
  config: HostConfig;
  version: string;
  db: Db;
  clock: Clock;
  log: Logger;
  bus: BusConnections;
  drain: DrainGate;
  metrics: HostMetricsRegistry;
  stores: Stores;
  supervision: Supervision;
  models: ModelsAndSchedules;
  handlers: ReturnType<typeof clientHandlers>;
  tools: ToolPipeline;
  maxPayload: number;
}) {
  const { config, db, clock, log, stores, supervision, models } = deps;
  const { nc, rpcNc } = deps.bus;
  const { events, dispatcher, sessions } = stores;
  return startHostBus({
    nc: rpcNc,
    prefix: config.prefix,
    hostId: config.hostId,
    version: deps.version,
    log,
    drain: deps.drain,
    metrics: deps.metrics,
    // Several hosts: a request for a session another host owns is forwarded to it once (forward.ts).
    forwarding: createForwarding({
      nc,
      prefix: config.prefix,
      hostId: config.hostId,
      timeoutMs: config.forwardTimeoutMs,
      log,
      ownerOf: (ref) => ownerOfRequest(db, ref.field, ref.id),
    }),
    // A reply waits until the events its request raised are stored and published.
    client: afterEvents(events, deps.handlers.client),
    gate: createGate({ sessions, devMode: config.devMode, settingsAdmins: config.settingsAdmins }),
    agent: afterEvents(
      events,
      createAgentApi({
        db,
        sessions,
        supervisor: supervision.supervisor,
        dispatcher,
        events,
        tools: deps.tools,
        maxPageBytes: Math.floor(deps.maxPayload / 2),
        parts: supervision.parts,
        live: createLiveOutput({
          nc,
          prefix: config.prefix,
          clock,
          log,
          audienceOf: async (sessionId) => {
            const row = await sessions.getRow(db, sessionId);
            return { sessionId, owner: row.owner, approvers: row.approvers };
          },
        }),
      }),
      // A worker follows no events: its reply waits for them stored and published, not for the PING.
      { reachServer: false },
    ),
    test: deps.handlers.test,
    onWorkerHello: (hello) => {
      if (hello) models.workers.heard(hello);
      dispatcher.reoffer();
    },
    onWorkerGoodbye: (workerId) => models.workers.forget(workerId),
    devMode: config.devMode,
    workerOf: workerOf(dispatcher, models.workers),
    // A request whose reply subject is not its caller's inbox is not served; it is logged and audited.
    onReplyRefused: createRefusalRecorder({
      clock,
      log,
      audit: (r, at) =>
        appendAudit(db, {
          at,
          principal: r.caller,
          action: "bus.reply_refused",
          decision: "not-served",
          details: { subject: r.subject, reply: r.reply ?? null, reason: r.reason },
        }),
    }),
  });
}

/** The worker a request proves to be from; its proven requests also keep it listed (workers.list). */
function workerOf(dispatcher: Stores["dispatcher"], workers: ModelsAndSchedules["workers"]) {
  const of = workerOfRequest(dispatcher);
  return (method: string, body: unknown) => {
    const workerId = of(method, body);
    if (workerId) workers.worked(workerId, (body as { turnId?: unknown } | null)?.turnId);
    return workerId;
  };
}
