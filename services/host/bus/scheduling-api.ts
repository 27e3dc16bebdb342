// Client methods `settings.*` and `scheduled.*` (docs/protocol.md, "Settings and scheduled tasks"):
// decode, check the principal, then the settings or schedule store or the scheduler (a run now), whose
// refusals (a `Result`) go back as the reply. Merged into the client handler map.
import {
  ScheduledCreateParams,
  ScheduledRunsParams,
  ScheduledTaskRef,
  ScheduledUpdateParams,
  SettingsSetParams,
} from "../../protocol/scheduling-schemas.ts";
import { ok } from "../../protocol/result.ts";
import { AfterPageParams, decodeParams, EmptyParams } from "../../protocol/schemas.ts";
import type { SchedulingMethod } from "../../protocol/subjects.ts";
import type { ClientHandler } from "./client-api.ts";
import { requireSettingsAdmin, type SettingsAdmins } from "./settings-admins.ts";
import type { ScheduleStore } from "../store/schedule-store.ts";
import type { ModelChoice } from "../sessions/model-choice.ts";
import type { Scheduler } from "../sessions/scheduler.ts";
import type { SettingsStore } from "../store/settings-store.ts";

export function createSchedulingApi(
  deps: {
    settings: SettingsStore;
    store: ScheduleStore;
    scheduler: Scheduler;
    /** The model check of every entry (sessions/model-choice.ts). */
    models?: Pick<ModelChoice, "choose">;
  } & SettingsAdmins,
): Record<SchedulingMethod, ClientHandler> {
  const { settings, store, scheduler } = deps;

  return {
    "settings.get": async (_principal, params) => {
      decodeParams(EmptyParams, params);
      return settings.get();
    },

    "settings.set": async (principal, params) => {
      const p = decodeParams(SettingsSetParams, params);
      requireSettingsAdmin(deps, principal, "change app settings");
      return settings.set(principal, p);
    },

    "scheduled.create": async (principal, params) => {
      const p = decodeParams(ScheduledCreateParams, params);
      deps.models?.choose(p.model);
      const task = await store.createTask(principal, p);
      if (task.ok) scheduler.wake();
      return task;
    },

    "scheduled.list": async (principal, params) => {
      const page = await store.listTasks(principal, decodeParams(AfterPageParams, params));
      return { tasks: page.items, next: page.next };
    },

    "scheduled.update": async (principal, params) => {
      const p = decodeParams(ScheduledUpdateParams, params);
      if (p.model !== undefined) deps.models?.choose(p.model);
      const task = await store.updateTask(principal, p);
      if (task.ok) scheduler.wake();
      return task;
    },

    "scheduled.delete": async (principal, params) => {
      const p = decodeParams(ScheduledTaskRef, params);
      return store.deleteTask(principal, p.taskId);
    },

    "scheduled.run": async (principal, params) => {
      const p = decodeParams(ScheduledTaskRef, params);
      return scheduler.runNow(principal, p.taskId);
    },

    "scheduled.runs": async (principal, params) => {
      const p = decodeParams(ScheduledRunsParams, params);
      const { taskId, ...page } = p;
      const runs = await store.listRuns(principal, taskId, page);
      return runs.ok ? ok({ runs: runs.value.items, next: runs.value.next }) : runs;
    },
  };
}
