// Client methods `settings.*` and `scheduled.*` (docs/protocol.md, "Settings and scheduled tasks"):
// decode, check the principal, then the settings or schedule store or the scheduler (a run now), whose
// refusals (a `Result`) go back as the reply. Merged into the client handler map.
import { ok } from "../../protocol/result.ts";
import type { ClientHandlers } from "./request-context.ts";
import type { SettingsAdmins } from "./settings-admins.ts";
import type { ScheduleStore } from "../store/schedule-store.ts";
import type { ModelChoice } from "../sessions/turns/model-choice.ts";
import type { Scheduler } from "../sessions/scheduling/scheduler.ts";
import type { SettingsStore } from "../store/settings-store.ts";

export function createSchedulingApi(
  deps: {
    settings: SettingsStore;
    store: ScheduleStore;
    scheduler: Scheduler;
    /** The model check of every entry (sessions/turns/model-choice.ts). */
    models?: Pick<ModelChoice, "choose">;
  } & SettingsAdmins,
): ClientHandlers<"scheduling"> {
  const { settings, store, scheduler } = deps;

  return {
    "settings.get": async () => ok(await settings.get()),

    // A settings admin's (the gate, gates.ts).
    "settings.set": async (principal, p) => ok(await settings.set(principal, p)),

    "scheduled.create": async (principal, p) => {
      const model = deps.models?.choose(p.model);
      if (model && !model.ok) return model;
      const task = await store.createTask(principal, p);
      if (task.ok) scheduler.wake();
      return task;
    },

    "scheduled.list": async (principal, p) => {
      const page = await store.listTasks(principal, p);
      return ok({ tasks: page.items, next: page.next });
    },

    // The task's owner is checked by the store under the task's row (gates.ts).
    "scheduled.update": async (principal, p) => {
      const model = p.model !== undefined ? deps.models?.choose(p.model) : undefined;
      if (model && !model.ok) return model;
      const task = await store.updateTask(principal, p);
      if (task.ok) scheduler.wake();
      return task;
    },

    "scheduled.delete": async (principal, p) => store.deleteTask(principal, p.taskId),

    "scheduled.run": async (principal, p) => scheduler.runNow(principal, p.taskId),

    "scheduled.runs": async (principal, p) => {
      const { taskId, ...page } = p;
      const runs = await store.listRuns(principal, taskId, page);
      return runs.ok ? ok({ runs: runs.value.items, next: runs.value.next }) : runs;
    },
  };
}
