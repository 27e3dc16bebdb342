// pi-host entry: connect NATS, resolve Postgres, migrate (advisory-locked), run the startup fence,
// and only then subscribe. Development mode (no NATS auth) is explicit and announced.
import { readFileSync } from "node:fs";
import path from "node:path";
import { connect } from "@nats-io/transport-node";
import { AppError } from "../protocol/app-error.ts";
import { errorFields, createLogger } from "../protocol/log.ts";
import { SUBJECT_TOKEN } from "../protocol/subjects.ts";
import { createAgentApi } from "./bus/agent-api.ts";
import { createClientApi } from "./bus/client-api.ts";
import { createClock } from "./clock.ts";
import { checkDatabase, createDb } from "./store/db.ts";
import { createFaultInjector } from "./sessions/fault-injector.ts";
import { createEventPublisher, ensureEventStream } from "./sessions/event-publisher.ts";
import { readHostConfig } from "./host-config.ts";
import { startHostBus } from "./bus/host-bus.ts";
import { migrateUp } from "./store/migrate.ts";
import { reportOrphanArtifacts } from "./store/orphan-artifacts.ts";
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
import { createSessionSupervisor } from "./sessions/session-supervisor.ts";
import { createSessionStore } from "./store/session-store.ts";
import { createSettingsStore } from "./store/settings-store.ts";
import { runStartupFence } from "./store/startup-fence.ts";
import { createTestHooks } from "./bus/test-hooks.ts";
import { createToolAborts } from "./tools/tool-aborts.ts";
import { createToolAdmission } from "./tools/tool-admission.ts";
import { createTurnDispatcher } from "./sessions/turn-dispatcher.ts";

const log = createLogger("host");

async function main(): Promise<void> {
  const config = readHostConfig();
  const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8"));
  if (config.devMode) {
    log.warn("host.dev_mode", {
      message:
        "DEVELOPMENT MODE: NATS without authentication; the principal in each subject is taken as given. Do not expose this host.",
    });
  }
  const clock = createClock();
  await checkDatabase(config.databaseUrl);
  const applied = await migrateUp({ databaseUrl: config.databaseUrl });
  log.info("host.migrated", { applied });
  // The fence runs on a pool of its own; every later write goes through the writer pool below,
  // which carries this incarnation (DESIGN §6: a superseded incarnation cannot commit).
  const fenceDb = createDb(config.databaseUrl, { max: 2 });

  const nc = await connect({
    servers: config.natsUrl,
    name: `pi-host ${config.hostId}`,
    maxReconnectAttempts: -1,
    ...(config.natsUser ? { user: config.natsUser, pass: config.natsPassword ?? "" } : {}),
  });

  // The fence runs before the first subscription: nothing is answered for fenced work.
  const fence = await runStartupFence({
    db: fenceDb,
    clock,
    hostId: config.hostId,
    log,
    info: { pid: process.pid, version: pkg.version },
  });
  await fenceDb.end();
  let onFenced: (message: string) => void = () => {};
  const db = createDb(config.databaseUrl, {
    writer: { hostId: config.hostId, incarnation: fence.incarnation, onFenced: (m) => onFenced(m) },
  });
  await reportOrphanArtifacts({ db, log });
  await ensureEventStream(nc, config.prefix, config.streamName, config.streamMaxBytes);

  const sessions = createSessionStore({ db, clock });

  const events = createEventPublisher({ nc, prefix: config.prefix, clock });
  let supervisorRef: ReturnType<typeof createSessionSupervisor> | null = null;
  const dispatcher = createTurnDispatcher({
    nc,
    prefix: config.prefix,
    clock,
    leaseMs: config.leaseMs,
    offerIntervalMs: config.offerIntervalMs,
    log,
    onLeaseLost: (lease) =>
      supervisorRef?.send(lease.sessionId, {
        type: "TURN_ENDED",
        turnId: lease.turnId,
        status: "aborted",
        code: "TURN_LEASE_EXPIRED",
      }),
  });
  const faults = config.testHooks ? createFaultInjector() : undefined;
  const plans = createPlanStore({
    db,
    clock,
    sessions,
    approvalTimeoutMs: config.approvalTimeoutMs,
    ...(faults ? { faults } : {}),
  });
  // Tell the owners and approvers of fenced work, on the bus, before serving anything.
  for (const proposalId of fence.fencedProposalIds) {
    const p = await plans.get(proposalId);
    const { workspaceRoot: _w, owner, approvers, ...proposal } = p;
    const mode = (await sessions.getRow(db, p.sessionId)).mode;
    events.publish({ sessionId: p.sessionId, owner, approvers }, "plan.changed", {
      state: mode === "plan" ? "planning" : "inactive",
      action: "interrupted",
      proposal,
      status: p.status,
      ...(p.executionId && p.executionState
        ? { execution: { executionId: p.executionId, state: p.executionState } }
        : {}),
    });
  }
  // Permission prompts (DESIGN §7); an abort or lease loss of a turn ends its prompts' wait.
  const permissions = createPermissionGate({
    db,
    clock,
    events,
    log,
    timeoutMs: config.permissionTimeoutMs,
  });
  const aborts = createToolAborts();
  const supervisor = createSessionSupervisor({
    ...(faults ? { faults } : {}),
    onTurnRevoked: (turnId) => {
      permissions.cancelForTurn(turnId);
      aborts.cancel(turnId);
    },
    db,
    clock,
    sessions,
    plans,
    dispatcher,
    events,
    log,
    leaseMs: config.leaseMs,
    heartbeatMs: config.heartbeatMs,
    maxRestarts: config.actorMaxRestarts,
    restartWindowMs: config.actorRestartWindowMs,
    passivateAfterMs: config.passivateAfterMs,
  });
  supervisorRef = supervisor;
  // Scheduled tasks and app settings (DESIGN §5 "Scheduled or unattended", §8).
  const schedules = createScheduleStore({ db, clock });
  const scheduler = createScheduler({
    clock,
    store: schedules,
    sessions,
    supervisor,
    hostId: config.hostId,
    log,
    graceMs: config.scheduleGraceMs,
    pollMs: config.schedulePollMs,
  });

  const service = await startHostBus({
    nc,
    prefix: config.prefix,
    hostId: config.hostId,
    version: pkg.version,
    log,
    client: {
      ...createClientApi({
        db,
        sessions,
        plans,
        supervisor,
        hostId: config.hostId,
        devMode: config.devMode,
        testBreakGuard: config.testBreakGuard,
      }),
      ...createProjectsApi({
        store: createProjectStore({ db, clock, workspaceRoots: config.workspaceRoots }),
        devMode: config.devMode,
        settingsAdmins: config.settingsAdmins,
      }),
      ...createSchedulingApi({
        settings: createSettingsStore({ db, clock }),
        store: schedules,
        scheduler,
        devMode: config.devMode,
        settingsAdmins: config.settingsAdmins,
      }),
      ...createPermissionsApi({ db, sessions, gate: permissions }),
      ...createPluginsApi({
        store: createPluginStore({ db, clock }),
        devMode: config.devMode,
        settingsAdmins: config.settingsAdmins,
      }),
    },
    agent: createAgentApi({
      db,
      clock,
      sessions,
      supervisor,
      dispatcher,
      events,
      permissions,
      aborts,
      plugins: createPluginCaller({ nc, prefix: config.prefix }),
      admission: createToolAdmission({
        maxConcurrent: config.toolsMaxConcurrent,
        maxPerSession: config.toolsMaxPerSession,
      }),
    }),
    test: faults
      ? createTestHooks({
          clock,
          faults,
          extra: {
            // DESIGN §10 "crash an actor": the session's actor throws (its provided injectFault).
            "actor.fault": async (p) => {
              const sessionId = (p as Record<string, unknown> | null)?.sessionId;
              if (typeof sessionId !== "string" || !SUBJECT_TOKEN.test(sessionId))
                throw new AppError("INVALID_PARAMS", "sessionId must be a session id");
              await sessions.getRow(db, sessionId);
              return supervisor.fault(sessionId);
            },
          },
        })
      : null,
    onWorkerHello: () => dispatcher.reoffer(),
  });

  await scheduler.start();
  await nc.flush();
  log.info("host.ready", {
    hostId: config.hostId,
    prefix: config.prefix,
    devMode: config.devMode,
  });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info("host.stopping", { signal });
    scheduler.stop();
    dispatcher.stop();
    await service.stop().catch(() => {});
    supervisor.stopAll();
    await nc.drain().catch(() => {});
    await db.end().catch(() => {});
    process.exit(0);
  };
  // A newer incarnation with this host id took over: stop serving at once, commit nothing more.
  onFenced = (message) => {
    if (stopping) return;
    stopping = true;
    log.error("host.fenced", { hostId: config.hostId, incarnation: fence.incarnation, message });
    scheduler.stop();
    dispatcher.stop();
    void service.stop().catch(() => {});
    supervisor.stopAll();
    // Time for the HOST_FENCED replies already sent to leave; exit code 3 says "superseded".
    setTimeout(() => process.exit(3), 200);
  };
  process.on("SIGTERM", () => void shutdown("SIGTERM"));
  process.on("SIGINT", () => void shutdown("SIGINT"));
}

main().catch((err) => {
  log.error("host.failed", errorFields(err));
  process.exit(1);
});
