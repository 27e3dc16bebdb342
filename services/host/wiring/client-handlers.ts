// Every client method's handler, as the bus serves them (bus/request-context.ts), with the test
// hooks when PI_TEST_HOOKS=1 and the approvals metric counted around plans.resolve.
import type { Db } from "../store/db.ts";
import type { Clock } from "../clock.ts";
import type { HostConfig } from "../host-config.ts";
import type { HostMetrics } from "../metrics.ts";
import { createAuditApi } from "../bus/audit-api.ts";
import { createClientApi } from "../bus/client-api.ts";
import { createEventsApi } from "../bus/events-api.ts";
import { createPermissionsApi } from "../bus/permissions-api.ts";
import { createPluginsApi } from "../bus/plugins-api.ts";
import { createProjectsApi } from "../bus/projects-api.ts";
import type { ClientHandler } from "../bus/request-context.ts";
import { createSchedulingApi } from "../bus/scheduling-api.ts";
import { wireTestHooks } from "../bus/test-hooks.ts";
import { createPluginStore } from "../store/plugin-store.ts";
import { createSettingsStore } from "../store/settings-store.ts";
import { sandboxStatus } from "../tools/sandbox-probe.ts";
import type { ModelsAndSchedules, Stores, Supervision } from "./sessions.ts";

export function clientHandlers(deps: {
  config: HostConfig;
  db: Db;
  clock: Clock;
  stores: Stores;
  supervision: Supervision;
  models: ModelsAndSchedules;
  metrics: Pick<HostMetrics, "approval">;
  /** Whether the event connection is up (host.status). */
  natsUp: () => boolean;
  /** What /readyz finds failing, for host.status. */
  readiness: () => Promise<string[]>;
  /** The server's max_payload: an artifacts.read page is three quarters of its half (base64 fits). */
  maxPayload: number;
}) {
  const { config, db, clock, stores, models } = deps;
  const { supervisor, permissions } = deps.supervision;
  const admins = { devMode: config.devMode, settingsAdmins: config.settingsAdmins };
  const hooks = wireTestHooks(
    config,
    {
      ...createClientApi({
        db,
        sessions: stores.sessions,
        plans: stores.plans,
        supervisor,
        hostId: config.hostId,
        ...admins,
        projects: stores.projects,
        natsReachable: deps.natsUp,
        readiness: deps.readiness,
        maxPageBytes: Math.floor((deps.maxPayload / 2) * 0.75),
        models: models.modelChoice,
        workers: models.workers,
        sandbox: () => sandboxStatus(config.tools.sandbox),
      }),
      ...createProjectsApi({
        store: stores.projects,
        sandbox: config.tools.sandbox,
        grantAcl: config.sandboxGrantAcl,
        ...admins,
      }),
      ...createSchedulingApi({
        settings: createSettingsStore({ db, clock }),
        store: models.schedules,
        scheduler: models.scheduler,
        models: models.modelChoice,
        ...admins,
      }),
      ...createPermissionsApi({ gate: permissions }),
      ...createAuditApi({ db, ...admins }),
      ...createEventsApi({ store: stores.eventStore }),
      ...createPluginsApi({ store: createPluginStore({ db, clock }) }),
    },
    { clock, faults: stores.faults, db, sessions: stores.sessions, supervisor },
  );
  return { client: countApprovals(hooks.client, deps.metrics.approval), test: hooks.test };
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
