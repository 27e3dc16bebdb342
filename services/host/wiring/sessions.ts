// The host's session side, built once at start (docs/architecture.md "Host start-up"): the stores,
// the event publisher, the turn dispatcher, the liveness watch that takes a dead host's sessions
// over, the permission gate, the tool runner and the supervisor of the session actors, the models
// and the scheduler. Each builder takes what it needs and nothing reads the environment.
import type { NatsConnection } from "@nats-io/nats-core";
import type { Logger } from "../../runtime/log.ts";
import type { Clock } from "../clock.ts";
import type { HostConfig } from "../host-config.ts";
import { formatListenAddress } from "../http-listener.ts";
import type { HostMetrics } from "../metrics.ts";
import { createBodyParts } from "../bus/body-parts.ts";
import { testFaults } from "../bus/test-hooks.ts";
import { createEventPublisher } from "../sessions/events/event-publisher.ts";
import { announceEndedWork } from "../sessions/events/fence-announce.ts";
import { createModelChoice } from "../sessions/turns/model-choice.ts";
import { createPermissionGate } from "../sessions/pipeline/permission-gate.ts";
import { createProjectInstructions } from "../sessions/turns/project-instructions.ts";
import { createScheduler } from "../sessions/scheduling/scheduler.ts";
import { createSessionSupervisor } from "../sessions/actors/session-supervisor.ts";
import { createTurnDispatcher } from "../sessions/turns/turn-dispatcher.ts";
import { createWorkerRegistry } from "../sessions/turns/worker-registry.ts";
import type { Db } from "../store/db.ts";
import { createEventStore } from "../store/event-store.ts";
import { startHostLiveness } from "../store/host-liveness.ts";
import { createPlanStore } from "../store/plan-store.ts";
import { createProjectStore } from "../store/project-store.ts";
import { createScheduleStore } from "../store/schedule-store.ts";
import { createSessionStore } from "../store/session-store.ts";
import { type FenceReport, otherHostListeners } from "../store/startup-fence.ts";
import { takeOverHost } from "../store/takeover.ts";
import { createWorkspaceAdvisoryLocks } from "../store/workspace-advisory-lock.ts";
import { createToolAborts } from "../tools/tool-aborts.ts";
import { createToolRunner } from "../tools/tool-runner.ts";
import { createToolAdmission } from "../tools/tool-admission.ts";
import { createPluginCaller } from "../tools/plugin-caller.ts";
import { createToolPipeline } from "../sessions/pipeline/tool-pipeline.ts";

export interface CoreDeps {
  config: HostConfig;
  db: Db;
  nc: NatsConnection;
  clock: Clock;
  log: Logger;
}

/** The stores, the event publisher and the dispatcher; fenced work is announced before serving. */
export async function buildStores(deps: CoreDeps, fence: FenceReport) {
  const { config, db, nc, clock, log } = deps;
  const sessions = createSessionStore({ db, clock });
  // Which folders each person may open as a project (PI_WORKSPACE_ACCESS, docs/security.md);
  // overlapping roots (left by earlier versions) are reported, and refused at every tool call.
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
  // The owners and approvers of fenced work are told on the bus before anything is served: every
  // aborted turn (HOST_RESTARTED), interrupted approval or execution, denied permission prompt.
  await announceEndedWork({ plans, events, log }, fence);
  return { sessions, projects, eventStore, events, dispatcher, faults, plans };
}
export type Stores = Awaited<ReturnType<typeof buildStores>>;

/**
 * The heartbeat, and at every tick the other hosts' liveness: a dead one's sessions are taken over
 * (one transaction) and what that ended is announced. Taken over, or possibly (a lease without a
 * committed beat), every tool this host runs is killed first (`killTools`), so no sandbox of a
 * session another host now owns writes on.
 */
export function watchLiveness(
  deps: CoreDeps & {
    fence: FenceReport;
    stores: Pick<Stores, "plans" | "events">;
    metrics: Pick<HostMetrics, "takeover">;
    killTools: (reason: string) => void;
    /** The writer's notice that this incarnation is superseded. */
    superseded: (message: string) => void;
  },
) {
  const { config, db, clock, log, fence } = deps;
  const { leaseMs, heartbeatMs } = config.liveness;
  return startHostLiveness({
    db,
    clock,
    hostId: config.hostId,
    incarnation: fence.incarnation,
    leaseMs,
    heartbeatMs,
    log,
    onDead: async (dead) => {
      const taken = await takeOverHost({
        db,
        clock,
        hostId: config.hostId,
        incarnation: fence.incarnation,
        deadHostId: dead.id,
        observedHeartbeat: dead.heartbeat,
        lockTimeoutMs: leaseMs,
        log,
      });
      if (!taken) return;
      deps.metrics.takeover();
      await announceEndedWork({ plans: deps.stores.plans, events: deps.stores.events, log }, taken);
    },
    onInDoubt: (reason) => deps.killTools(reason),
    // Its next write is refused anyway (HOST_FENCED, then the exit); one that never comes must not
    // leave a host serving that another host took over: it stops after one lease.
    onSuperseded: () =>
      setTimeout(
        () => deps.superseded("the host row no longer names this incarnation as running"),
        leaseMs,
      ).unref(),
  });
}

/**
 * What runs a session's turns: the tool aborts, the permission gate, worker bodies in parts, the
 * tool runner (built once from the configuration; claims read AGENTS.md through it) and the
 * supervisor of the session actors.
 */
export function buildSupervision(
  deps: CoreDeps & { stores: Stores; metrics: Pick<HostMetrics, "actorRestart"> },
) {
  const { config, db, clock, log, stores } = deps;
  const aborts = createToolAborts();
  const killTools = (reason: string) => {
    const killed = aborts.cancelAll();
    log.warn("host.tools_killed", { reason, killed });
  };
  // An abort or lease loss of a turn ends its prompts' wait.
  const permissions = createPermissionGate({
    db,
    clock,
    events: stores.events,
    log,
    timeoutMs: config.permissionTimeoutMs,
  });
  // Bounded for the whole host and freed when their turn's token dies.
  const parts = createBodyParts({ clock });
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
    ...(stores.faults ? { faults: stores.faults } : {}),
    onTurnRevoked: (turnId) => {
      permissions.cancelForTurn(turnId);
      aborts.cancel(turnId);
      parts.dropTurn(turnId);
    },
    db,
    clock,
    sessions: stores.sessions,
    plans: stores.plans,
    dispatcher: stores.dispatcher,
    events: stores.events,
    log,
    onActorRestart: () => deps.metrics.actorRestart(),
    leaseMs: config.leaseMs,
    heartbeatMs: config.heartbeatMs,
    maxRestarts: config.actorMaxRestarts,
    restartWindowMs: config.actorRestartWindowMs,
    passivateAfterMs: config.passivateAfterMs,
  });
  return { aborts, killTools, permissions, parts, workspaceLocks, runner, supervisor };
}
export type Supervision = ReturnType<typeof buildSupervision>;

/**
 * The workers heard from, the model a session runs when it names none (said at start, never a
 * silent demo), and the scheduler of scheduled tasks (docs/architecture.md "Scheduled tasks and
 * settings").
 */
export function buildModelsAndSchedules(
  deps: CoreDeps & { stores: Stores; supervisor: Supervision["supervisor"] },
) {
  const { config, db, clock, log, stores } = deps;
  const workers = createWorkerRegistry({ clock, isLeased: stores.dispatcher.isLeased });
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
  const schedules = createScheduleStore({ db, clock, hostId: config.hostId });
  const scheduler = createScheduler({
    clock,
    store: schedules,
    sessions: stores.sessions,
    supervisor: deps.supervisor,
    hostId: config.hostId,
    log,
    graceMs: config.scheduleGraceMs,
    pollMs: config.schedulePollMs,
    models: modelChoice,
  });
  return { workers, modelChoice, schedules, scheduler };
}
export type ModelsAndSchedules = ReturnType<typeof buildModelsAndSchedules>;

/** Every tools.execute: admission, policy, prompt, run and record (sessions/pipeline/tool-pipeline.ts). */
export function buildToolPipeline(
  deps: CoreDeps & { stores: Stores; supervision: Supervision; metrics: HostMetrics; maxPayload: number },
) {
  const { config, db, nc, clock, stores, supervision } = deps;
  return createToolPipeline({
    // A tool result is at most a quarter of the server's max_payload (docs/protocol.md "Message bounds").
    maxResultBytes: Math.floor(deps.maxPayload / 4),
    db,
    clock,
    sessions: stores.sessions,
    supervisor: supervision.supervisor,
    dispatcher: stores.dispatcher,
    events: stores.events,
    permissions: supervision.permissions,
    runner: supervision.runner,
    aborts: supervision.aborts,
    projects: stores.projects,
    plugins: createPluginCaller({ nc, prefix: config.prefix }),
    admission: createToolAdmission({
      maxConcurrent: config.toolsMaxConcurrent,
      maxPerSession: config.toolsMaxPerSession,
    }),
    metrics: deps.metrics,
  });
}
