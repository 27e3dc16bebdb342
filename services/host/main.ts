// pi-host entry: connect NATS, resolve Postgres, migrate (advisory-locked), run the startup fence,
// and only then subscribe. Development mode (no NATS auth) is explicit and announced.
import { readFileSync } from "node:fs";
import path from "node:path";
import { connect } from "@nats-io/transport-node";
import { errorFields, createLogger } from "../protocol/log.ts";
import { agentSubject, inboxPrefix } from "../protocol/subjects.ts";
import { createAgentApi, workerOfRequest } from "./bus/agent-api.ts";
import { createRefusalRecorder } from "./bus/reply-rules.ts";
import { createBodyParts } from "./bus/body-parts.ts";
import { createLiveOutput } from "./sessions/live-output.ts";
import { createModelChoice } from "./sessions/model-choice.ts";
import { createWorkerRegistry } from "./sessions/worker-registry.ts";
import { appendAudit } from "./store/audit-log.ts";
import { createAuditApi } from "./bus/audit-api.ts";
import { afterEvents, createEventsApi } from "./bus/events-api.ts";
import { createEventStore } from "./store/event-store.ts";
import { createClientApi } from "./bus/client-api.ts";
import { createClock } from "./clock.ts";
import { checkDatabase, createDb } from "./store/db.ts";
import { createEventPublisher } from "./sessions/event-publisher.ts";
import { readHostConfig } from "./host-config.ts";
import { createDrainGate, startHostBus } from "./bus/host-bus.ts";
import { migrateUp } from "./store/migrate.ts";
import { createForwarding } from "./bus/forward.ts";
import { createGate } from "./bus/gates.ts";
import type { ClientHandler } from "./bus/request-context.ts";
import { ownerOfRequest } from "./store/request-session.ts";
import { reportOrphanArtifacts } from "./store/orphan-artifacts.ts";
import { createWorkspaceAdvisoryLocks } from "./store/workspace-advisory-lock.ts";
import { createPermissionGate } from "./sessions/permission-gate.ts";
import { createPermissionsApi } from "./bus/permissions-api.ts";
import { createPlanStore } from "./store/plan-store.ts";
import { createPluginStore } from "./store/plugin-store.ts";
import { createPluginCaller } from "./tools/plugin-caller.ts";
import { createPluginsApi } from "./bus/plugins-api.ts";
import { createProjectStore } from "./store/project-store.ts";
import { createProjectsApi } from "./bus/projects-api.ts";
import { createScheduleStore } from "./store/schedule-store.ts";
import { createScheduler } from "./sessions/scheduler.ts";
import { createSchedulingApi } from "./bus/scheduling-api.ts";
import { createProjectInstructions } from "./sessions/project-instructions.ts";
import { createSessionSupervisor } from "./sessions/session-supervisor.ts";
import { createSessionStore } from "./store/session-store.ts";
import { createSettingsStore } from "./store/settings-store.ts";
import { awaitHostIdFree, runStartupFence, runStopFence } from "./store/startup-fence.ts";
import { startHostLiveness } from "./store/host-liveness.ts";
import { takeOverHost } from "./store/takeover.ts";
import { announceEndedWork } from "./sessions/fence-announce.ts";
import { testFaults, wireTestHooks } from "./bus/test-hooks.ts";
import { createNotices } from "./sessions/notices.ts";
import { createToolPipeline } from "./sessions/tool-pipeline.ts";
import { cleanupLeftoverCgroups, sandboxLimits } from "./tools/sandbox-limits.ts";
import { oomScorePin } from "./tools/sandbox-oom.ts";
import { sandboxAvailability, sandboxStatus } from "./tools/sandbox-probe.ts";
import { createToolRunner } from "./tools/tool-runner.ts";
import { createToolAborts } from "./tools/tool-aborts.ts";
import { createToolAdmission } from "./tools/tool-admission.ts";
import { createTurnDispatcher } from "./sessions/turn-dispatcher.ts";
import { createHostMetrics } from "./metrics.ts";
import {
  formatListenAddress,
  type HttpListener,
  notReady,
  type Readiness,
  startHttpListener,
  within,
} from "./http-listener.ts";
import { countLeasesOwned, otherHostListeners } from "./store/startup-fence.ts";

const log = createLogger("host");
/** How long a drain waits for the requests in flight at SIGTERM before it ends them (HOST_SHUTTING_DOWN). */
const DRAIN_GRACE_MS = 3_000;

async function main(): Promise<void> {
  const config = readHostConfig();
  const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8"));
  if (config.devMode) {
    log.warn("host.dev_mode", {
      message:
        "DEVELOPMENT MODE: NATS without authentication; the principal in each subject is taken as given. Do not expose this host.",
    });
  }
  // NATS first: a bus that checks no credentials lets anyone act as anyone, so outside development
  // mode the host refuses it before it touches the database (the refusal changes nothing).
  const nc = await connect({
    servers: config.natsUrl,
    name: `pi-host ${config.hostId}`,
    maxReconnectAttempts: -1,
    // Plugin and JetStream replies come back under the host's own prefix (its user's inbox).
    ...(config.natsUser ? { inboxPrefix: inboxPrefix(config.natsUser) } : {}),
    ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword ?? "" } : {}),
  });
  if (!config.devMode && nc.info?.auth_required !== true) {
    log.error("host.nats_unauthenticated", {
      natsUrl: config.natsUrl.replace(/\/\/[^@/]*@/, "//"),
      message:
        "the NATS server does not require authentication, so any connection could act as any person or worker; run nats-server with the authenticated configuration (docs/operations.md) or, for development only, set PI_DEV_MODE=1",
    });
    await nc.close().catch(() => {});
    process.exit(2);
  }
  // Requests are served on a connection of their own, whose NATS user may publish only into
  // inboxes (docs/security.md, "The bus"); events, offers, cancels and plugin calls go out on `nc`.
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
  // Whether the event connection is up now (host.status); a reconnect brings it back.
  let natsUp = true;
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === "disconnect") natsUp = false;
      else if (s.type === "reconnect") natsUp = true;
    }
  })();
  const clock = createClock();
  await checkDatabase(config.databaseUrl);
  const applied = await migrateUp({ databaseUrl: config.databaseUrl });
  log.info("host.migrated", { applied });
  // The fence runs on a pool of its own; every later write goes through the writer pool below,
  // which carries this incarnation (docs/architecture.md: a superseded incarnation cannot commit).
  const fenceDb = createDb(config.databaseUrl, { max: 2 });
  // Several hosts (issue #16): a `running` row of this id whose heartbeat moves within one lease is
  // another live process: this one exits (HOST_ID_IN_USE) before it changes anything.
  const { liveness } = config;
  let fence: Awaited<ReturnType<typeof runStartupFence>>;
  try {
    const seen = await awaitHostIdFree({
      db: fenceDb,
      clock,
      hostId: config.hostId,
      leaseMs: liveness.leaseMs,
      pollMs: liveness.heartbeatMs,
      log,
    });
    // The fence runs before the first subscription: nothing is answered for fenced work. Started at
    // the same moment as another process with this id, it is HOST_ID_IN_USE too (`seen`).
    fence = await runStartupFence({
      db: fenceDb,
      clock,
      hostId: config.hostId,
      log,
      seen,
      // The health and metrics listener is written here, so other hosts' previews block it too.
      info: {
        pid: process.pid,
        version: pkg.version,
        ...(config.httpListen ? { http: formatListenAddress(config.httpListen) } : {}),
      },
    });
  } catch (err) {
    if ((err as { code?: unknown }).code !== "HOST_ID_IN_USE") throw err;
    log.error("host.id_in_use", {
      hostId: config.hostId,
      code: "HOST_ID_IN_USE",
      message: (err as Error).message,
    });
    await fenceDb.end().catch(() => {});
    await Promise.all([nc.close().catch(() => {}), rpcNc.close().catch(() => {})]);
    process.exit(2);
  }

  await fenceDb.end();
  // The writer announces the first write the fence refused; the host subscribes below, once serving.
  const writerNotices = createNotices<{ fenced: string }>((_, err) =>
    log.error("host.notice_failed", errorFields(err)),
  );
  const db = createDb(config.databaseUrl, {
    writer: {
      hostId: config.hostId,
      incarnation: fence.incarnation,
      onFenced: (m) => writerNotices.emit("fenced", m),
      // Half a lease: a paused host's open transaction ends before another host's takeover needs it.
      idleInTransactionMs: Math.max(500, Math.floor(liveness.leaseMs / 2)),
    },
  });
  // The host's own Prometheus registry (metrics.ts); the fence above is its first count.
  const metrics = createHostMetrics({
    hostId: config.hostId,
    leasesOwned: () => countLeasesOwned(db, config.hostId),
  });
  metrics.fence();

  const sessions = createSessionStore({ db, clock });
  // Overlapping project roots (left by earlier versions) are reported, and refused at every tool call.
  // Which folders each person may open as a project (PI_WORKSPACE_ACCESS, docs/security.md).
  const projects = createProjectStore({
    db,
    clock,
    workspaceRoots: config.workspaceRoots,
    workspaceAccess: config.workspaceAccess,
  });
  await projects.reportOverlaps(log);

  // Every event is stored with its per-session sequence before it is published (events.since).
  const eventStore = createEventStore({ db, clock });
  const events = createEventPublisher({
    nc,
    prefix: config.prefix,
    clock,
    store: eventStore,
    log,
    hostId: config.hostId,
  });
  const dispatcher = createTurnDispatcher({
    nc,
    prefix: config.prefix,
    hostId: config.hostId,
    clock,
    leaseMs: config.leaseMs,
    offerIntervalMs: config.offerIntervalMs,
    log,
  });
  const faults = testFaults(config);
  const plans = createPlanStore({
    db,
    clock,
    sessions,
    approvalTimeoutMs: config.approvalTimeoutMs,
    sandboxUser: config.tools.sandbox.user,
    ...(faults ? { faults } : {}),
  });
  // Tell the owners and approvers of fenced work, on the bus, before serving anything: every
  // aborted turn (HOST_RESTARTED), interrupted approval or execution, denied permission prompt.
  await announceEndedWork({ plans, events, log }, fence);
  // Abort signals of running tool calls by turn; every one of them when the host may be taken over.
  const aborts = createToolAborts();
  const killTools = (reason: string) => {
    const killed = aborts.cancelAll();
    log.warn("host.tools_killed", { reason, killed });
  };
  // The heartbeat, and every tick the other hosts' liveness: a dead one's sessions are taken over
  // (one transaction) and what that ended is announced; actors are created on demand afterwards.
  const hostLiveness = startHostLiveness({
    db,
    clock,
    hostId: config.hostId,
    incarnation: fence.incarnation,
    leaseMs: liveness.leaseMs,
    heartbeatMs: liveness.heartbeatMs,
    log,
    onDead: async (dead) => {
      const taken = await takeOverHost({
        db,
        clock,
        hostId: config.hostId,
        incarnation: fence.incarnation,
        deadHostId: dead.id,
        observedHeartbeat: dead.heartbeat,
        lockTimeoutMs: liveness.leaseMs,
        log,
      });
      if (taken) metrics.takeover();
      if (taken) await announceEndedWork({ plans, events, log }, taken);
    },
    // Taken over, or possibly (a lease without a committed beat): every tool this host runs is
    // killed first, so no sandbox of a session another host now owns writes on.
    onInDoubt: (reason) => killTools(reason),
    // Its next write is refused anyway (HOST_FENCED, then the exit); one that never comes must not
    // leave a host serving that another host took over: it stops after one lease.
    onSuperseded: () =>
      setTimeout(
        () => writerNotices.emit("fenced", "the host row no longer names this incarnation as running"),
        liveness.leaseMs,
      ).unref(),
  });
  // Permission prompts; an abort or lease loss of a turn ends its prompts' wait.
  const permissions = createPermissionGate({
    db,
    clock,
    events,
    log,
    timeoutMs: config.permissionTimeoutMs,
  });
  // Worker bodies waiting in parts, bounded for the whole host and freed when their turn's token dies.
  const parts = createBodyParts({ clock });
  // The tool runner is built once, from the configuration read at start; claims read the
  // project's AGENTS.md through it (the session's sandboxed file helper).
  // Sessions of one project may be owned by different hosts: the workspace lock holds across them.
  const workspaceLocks = createWorkspaceAdvisoryLocks(config.databaseUrl);
  const runner = createToolRunner({
    ...config.tools,
    crossHostLock: (workspace, fn) => workspaceLocks.hold(workspace, fn),
    // Every pi-host listener: this host's, PI_HTTP_BLOCK, and what the other hosts' rows record.
    previewBlocked: async () => [
      ...(config.httpListen ? [formatListenAddress(config.httpListen)] : []),
      ...config.httpBlock,
      ...(await otherHostListeners(db, config.hostId)),
    ],
  });
  const supervisor = createSessionSupervisor({
    instructions: createProjectInstructions({ runner }),
    ...(faults ? { faults } : {}),
    onTurnRevoked: (turnId) => {
      permissions.cancelForTurn(turnId);
      aborts.cancel(turnId);
      parts.dropTurn(turnId);
    },
    db,
    clock,
    sessions,
    plans,
    dispatcher,
    events,
    log,
    onActorRestart: () => metrics.actorRestart(),
    leaseMs: config.leaseMs,
    heartbeatMs: config.heartbeatMs,
    maxRestarts: config.actorMaxRestarts,
    restartWindowMs: config.actorRestartWindowMs,
    passivateAfterMs: config.passivateAfterMs,
  });
  // What the host sends is bounded by the server's max_payload, read from the connection
  // (docs/protocol.md "Message bounds"): tool results a quarter of it, context pages a half,
  // plan-file pages three quarters of a half (their base64 fits the half).
  const maxPayload = rpcNc.info?.max_payload ?? 1024 * 1024;
  // The model a session runs when it names none, said at start (never a silent demo).
  const workers = createWorkerRegistry({ clock, isLeased: dispatcher.isLeased });
  const modelChoice = createModelChoice({
    devMode: config.devMode,
    defaultModel: config.defaultModel,
    providers: config.modelProviders,
    workers,
  });
  log[modelChoice.defaultModel ? "info" : "warn"]("host.default_model", {
    model: modelChoice.defaultModel,
    providers: config.modelProviders,
    ...(modelChoice.defaultModel
      ? {}
      : { message: "no PI_DEFAULT_MODEL: a session must name its model ({provider, model})" }),
  });
  // Scheduled tasks and app settings (docs/architecture.md, "Scheduled tasks and settings").
  const schedules = createScheduleStore({ db, clock, hostId: config.hostId });
  const scheduler = createScheduler({
    clock,
    store: schedules,
    sessions,
    supervisor,
    hostId: config.hostId,
    log,
    graceMs: config.scheduleGraceMs,
    pollMs: config.schedulePollMs,
    models: modelChoice,
  });

  // What /readyz checks, once the drain gate exists (below); host.status reports the same list.
  let readinessChecks: Readiness | null = null;
  const hooks = wireTestHooks(
    config,
    {
      ...createClientApi({
        db,
        sessions,
        plans,
        supervisor,
        hostId: config.hostId,
        devMode: config.devMode,
        projects,
        settingsAdmins: config.settingsAdmins,
        natsReachable: () => natsUp && !nc.isClosed(),
        readiness: () => (readinessChecks ? notReady(readinessChecks) : Promise.resolve(["starting"])),
        maxPageBytes: Math.floor((maxPayload / 2) * 0.75),
        models: modelChoice,
        workers,
        sandbox: () => sandboxStatus(config.tools.sandbox),
      }),
      ...createProjectsApi({
        store: projects,
        sandbox: config.tools.sandbox,
        grantAcl: config.sandboxGrantAcl,
        devMode: config.devMode,
        settingsAdmins: config.settingsAdmins,
      }),
      ...createSchedulingApi({
        settings: createSettingsStore({ db, clock }),
        store: schedules,
        scheduler,
        models: modelChoice,
        devMode: config.devMode,
        settingsAdmins: config.settingsAdmins,
      }),
      ...createPermissionsApi({ gate: permissions }),
      ...createAuditApi({ db, devMode: config.devMode, settingsAdmins: config.settingsAdmins }),
      ...createEventsApi({ store: eventStore }),
      ...createPluginsApi({ store: createPluginStore({ db, clock }) }),
    },
    { clock, faults, db, sessions, supervisor },
  );
  // Each sandbox's own bounds: cgroups left by a host process that is gone are removed; which
  // bounds hold here is said plainly.
  const leftover = await cleanupLeftoverCgroups(config.tools.sandbox);
  const bounds = (await sandboxLimits(config.tools.sandbox)).describe();
  const oom = await oomScorePin(config.tools.sandbox);
  // Whether a tool sandbox starts here at all: said once, loudly, and /readyz names `sandbox` if not.
  const sandbox = await sandboxAvailability(config.tools.sandbox);
  if (!sandbox.available)
    log.error("host.sandbox_unavailable", {
      reason: sandbox.unavailableReason,
      message:
        "no tool sandbox starts on this host: Bash, BrowserPreview and the file tools are SANDBOX_UNAVAILABLE, /readyz answers 503 naming sandbox",
    });
  log[bounds.kind === "none" || !oom.oomScorePinned ? "warn" : "info"]("host.sandbox_bounds", {
    ...bounds,
    leftoverRemoved: leftover.removed,
    leftoverFailed: leftover.failed.length,
    oomScorePinned: oom.oomScorePinned,
    ...(oom.reason ? { oomReason: oom.reason } : {}),
    ...(bounds.kind === "none"
      ? {
          guarantee:
            "weaker: no per-sandbox process or memory limit (no usable cgroup); one session can exhaust the machine for all (docs/operations.md)",
        }
      : {}),
  });
  const tools = createToolPipeline({
    maxResultBytes: Math.floor(maxPayload / 4),
    db,
    clock,
    sessions,
    supervisor,
    dispatcher,
    events,
    permissions,
    runner,
    aborts,
    projects,
    plugins: createPluginCaller({ nc, prefix: config.prefix }),
    admission: createToolAdmission({
      maxConcurrent: config.toolsMaxConcurrent,
      maxPerSession: config.toolsMaxPerSession,
    }),
    metrics,
  });

  let stopping = false;
  const drain = createDrainGate();
  // The health, readiness and metrics listener (PI_HTTP_LISTEN), from the fence on; ready once serving.
  let serving = false;
  // A listener that cannot bind (the port is taken) is said loudly, and the host serves the bus anyway:
  // probes of /healthz then fail, which is what an operator sees.
  readinessChecks = {
    database: () => within(1_000, () => db.query("SELECT 1").then(() => true)),
    nats: () => natsUp && !nc.isClosed() && !rpcNc.isClosed(),
    serving: () => serving,
    draining: () => drain.draining,
    sandbox: () => sandbox.available,
  };
  const httpListen = config.httpListen;
  const http: HttpListener | null = httpListen
    ? await startHttpListener({
        listen: httpListen,
        readiness: readinessChecks,
        scrape: () => metrics.scrape(),
        onError: (err) => log.warn("host.http_failed", errorFields(err)),
      }).catch((err) => {
        log.error("host.http_unavailable", {
          address: formatListenAddress(httpListen),
          ...errorFields(err),
          message: "the health and metrics listener did not start (PI_HTTP_LISTEN); the bus is served",
        });
        return null;
      })
    : null;
  if (http) log.info("host.http_listening", { address: formatListenAddress(http.address) });
  const service = await startHostBus({
    nc: rpcNc,
    prefix: config.prefix,
    hostId: config.hostId,
    version: pkg.version,
    log,
    drain,
    metrics,
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
    client: afterEvents(events, countApprovals(hooks.client, metrics.approval)),
    gate: createGate({ sessions, devMode: config.devMode, settingsAdmins: config.settingsAdmins }),
    agent: afterEvents(
      events,
      createAgentApi({
        db,
        sessions,
        supervisor,
        dispatcher,
        events,
        tools,
        maxPageBytes: Math.floor(maxPayload / 2),
        parts,
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
    ),
    test: hooks.test,
    onWorkerHello: (hello) => {
      if (hello) workers.heard(hello);
      dispatcher.reoffer();
    },
    onWorkerGoodbye: (workerId) => workers.forget(workerId),
    devMode: config.devMode,
    workerOf: (() => {
      // A worker's proven requests also keep it listed, with the turns it holds (workers.list).
      const of = workerOfRequest(dispatcher);
      return (method: string, body: unknown) => {
        const workerId = of(method, body);
        if (workerId) workers.worked(workerId, (body as { turnId?: unknown } | null)?.turnId);
        return workerId;
      };
    })(),
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

  // A service stopped by an error (say, a subscription the server refused) answers nothing more:
  // that is not a host that may keep running.
  void service.stopped.then((err) => {
    if (stopping) return;
    log.error("host.service_stopped", err ? errorFields(err) : {});
    process.exit(1);
  });

  await scheduler.start();
  events.startPruning();
  await nc.flush();
  await rpcNc.flush();
  // Every worker says hello again (what it serves: models.list) now that this host listens.
  nc.publish(agentSubject(config.prefix, "rollcall"));
  serving = true;
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
    listPlanFiles: (root) => runner.listPlanFiles(root),
  }).catch((err) => log.warn("host.orphan_artifacts_failed", errorFields(err)));

  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // The drain: from here every new request is refused with a retriable HOST_SHUTTING_DOWN (the
    // service stays subscribed, so none goes unanswered); those in flight finish and are replied to.
    drain.start();
    log.info("host.stopping", { signal, inFlight: drain.inFlight() });
    // A stopping host takes nobody over; its heartbeat may stop too (the stop fence marks it stopped,
    // and without that commit the others take its sessions after one lease).
    hostLiveness.stop();
    scheduler.stop();
    const drained = await drain.idle(DRAIN_GRACE_MS);
    // The workers of leased turns are told to stop them; actors stop.
    dispatcher.revokeAll();
    dispatcher.stop();
    supervisor.stopAll();
    // What runs ends now, announced: turns HOST_STOPPING, executions and approvals interrupted,
    // prompts denied; nothing is replayed at the next start. The same commit marks the host row
    // `stopped`, so another host takes its sessions over at once.
    await runStopFence({ db, clock, hostId: config.hostId, incarnation: fence.incarnation, log })
      .then((ended) => announceEndedWork({ plans, events, log }, ended))
      .catch((err) => log.warn("host.stop_fence_failed", errorFields(err)));
    // A request still waiting (on an actor that stopped) is answered HOST_SHUTTING_DOWN, then the
    // service unsubscribes: later requests go to another host of the queue group (or get no responders).
    if (!(await drain.idle(500))) drain.cut();
    await drain.idle(500);
    log.info("host.drained", { drainedInGrace: drained, inFlight: drain.inFlight() });
    await service.stop().catch(() => {});
    await http?.close().catch(() => {});
    await runner.close().catch(() => {});
    await workspaceLocks.close().catch(() => {});
    await events.flush().catch(() => {});
    await rpcNc.drain().catch(() => {});
    await nc.drain().catch(() => {});
    await db.end().catch(() => {});
    process.exit(0);
  };
  // A newer incarnation with this host id took over: stop serving at once, commit nothing more.
  writerNotices.on("fenced", (message) => {
    if (stopping) return;
    stopping = true;
    killTools("fenced");
    log.error("host.fenced", { hostId: config.hostId, incarnation: fence.incarnation, message });
    hostLiveness.stop();
    scheduler.stop();
    dispatcher.stop();
    void service.stop().catch(() => {});
    supervisor.stopAll();
    // Time for the HOST_FENCED replies already sent to leave; exit code 3 says "superseded".
    setTimeout(() => process.exit(3), 200);
  });
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

/** plans.resolve outcomes (the approvals metric): the action when it succeeds, else the refusal's code. */
function countApprovals<T extends { "plans.resolve": ClientHandler<"plans.resolve"> }>(
  client: T,
  approval: (outcome: string) => void,
): T {
  const resolve = client["plans.resolve"];
  const counted: ClientHandler<"plans.resolve"> = (principal, params, ctx) =>
    resolve(principal, params, ctx).then(
      (value) => {
        approval(value.ok ? params.action : value.refusal.code);
        return value;
      },
      (err) => {
        const code = (err as { code?: unknown })?.code;
        approval(typeof code === "string" ? code : "INTERNAL");
        throw err;
      },
    );
  return { ...client, "plans.resolve": counted };
}

main().catch((err) => {
  log.error("host.failed", errorFields(err));
  process.exit(1);
});
