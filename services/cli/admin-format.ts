// Human-readable text for the admin views the host returns: app settings, scheduled tasks and their
// runs, plugins, project members and audit pages. Pure; `--json` bypasses all of it. Free text from
// the bus (names, prompts, descriptions, details) is printed JSON-quoted, so one row stays one line.
import type { AuditEntryView, AuditPage } from "../protocol/audit-schemas.ts";
import type { PluginView } from "../protocol/plugin-schemas.ts";
import type { ProjectMembersView } from "../protocol/schemas.ts";
import type { ScheduledRunView, ScheduledTaskView, SettingsView } from "../protocol/scheduling-schemas.ts";
import type { AuditOptions } from "./admin-params.ts";

const q = (s: string) => JSON.stringify(s);

export function formatSettings(s: SettingsView): string[] {
  return [`default mode:            ${s.defaultMode}`, `default permission mode: ${s.defaultPermissionMode}`];
}

export function formatTask(t: ScheduledTaskView): string[] {
  return [
    `task ${t.id} ${q(t.name)}`,
    `  project:     ${t.projectId}`,
    `  owner:       ${t.owner}`,
    `  schedule:    ${t.cron} (${t.timezone})`,
    `  enabled:     ${t.enabled ? "yes" : "no"}`,
    `  next run:    ${t.nextRunAt ?? "none"}`,
    `  mode:        ${t.mode}`,
    `  permissions: ${t.permissionMode}`,
    `  model:       ${t.model.provider}/${t.model.model}`,
    `  prompt:      ${q(t.prompt)}`,
    `  version:     ${t.version}, updated ${t.updatedAt}`,
  ];
}

export function formatTaskCreated(t: ScheduledTaskView): string[] {
  return [
    `task ${t.id} created: ${t.cron} (${t.timezone}), next run ${t.nextRunAt ?? "none (disabled)"}, mode ${t.mode}, permissions ${t.permissionMode}`,
  ];
}

export function formatTaskList(tasks: ScheduledTaskView[]): string[] {
  if (tasks.length === 0) return ["no scheduled tasks"];
  return tasks.map(
    (t) =>
      `${t.id}  ${t.enabled ? "enabled " : "disabled"}  ${t.cron} (${t.timezone})  next ${t.nextRunAt ?? "none"}  ${t.mode}/${t.permissionMode}  project ${t.projectId}  ${q(t.name)}`,
  );
}

export function formatTaskDeleted(r: { taskId: string }): string[] {
  return [`task ${r.taskId} deleted`];
}

export function formatRun(r: ScheduledRunView): string[] {
  return [
    `${r.runId}  ${r.status}  ${r.trigger ?? "-"}  scheduled for ${r.scheduledFor}  session ${r.sessionId ?? "-"}  turn ${r.turnId ?? "-"}${r.errorCode ? `  error ${r.errorCode}` : ""}${r.endedAt ? `  ended ${r.endedAt}` : ""}`,
  ];
}

export function formatRunStarted(r: ScheduledRunView): string[] {
  return [
    `run ${r.runId} of task ${r.taskId}: ${r.status}, session ${r.sessionId ?? "-"}, turn ${r.turnId ?? "-"}`,
  ];
}

export function formatRunList(runs: ScheduledRunView[]): string[] {
  if (runs.length === 0) return ["no runs"];
  return runs.flatMap(formatRun);
}

export function formatPlugin(p: PluginView): string[] {
  return [
    `plugin ${p.id}${p.name !== null ? ` ${q(p.name)}` : ""}: ${p.enabled ? "enabled" : "disabled"}, registered by ${p.registeredBy}, updated ${p.updatedAt}`,
    ...p.tools.map((t) => `  tool ${t.name} (${t.risk} risk): ${q(t.description)}`),
  ];
}

export function formatPluginList(plugins: PluginView[]): string[] {
  if (plugins.length === 0) return ["no plugins registered"];
  return plugins.map(
    (p) =>
      `${p.id}  ${p.enabled ? "enabled " : "disabled"}  ${p.tools.length} tool${p.tools.length === 1 ? "" : "s"}: ${p.tools.map((t) => `${t.name} (${t.risk})`).join(", ")}${p.name !== null ? `  ${q(p.name)}` : ""}`,
  );
}

/** A project's members as read (every page, or one: `v.members` is what was read). */
export function formatMembers(v: Pick<ProjectMembersView, "projectId" | "owner" | "members">): string[] {
  return [
    `project ${v.projectId}: owner ${v.owner}, ${v.members.length} member${v.members.length === 1 ? "" : "s"}`,
    ...v.members.map(
      (m) =>
        `  ${m.principal}  ${m.principal === v.owner ? "owner" : "member"}  added ${m.addedAt}${m.addedBy !== null ? ` by ${m.addedBy}` : ""}`,
    ),
  ];
}

/** One audit row on one line: id, time, who, what, the decision and code, the ids, then the details. */
export function formatAuditEntry(e: AuditEntryView): string {
  const ids = (
    [
      ["session", e.sessionId],
      ["project", e.projectId],
      ["turn", e.turnId],
      ["tool-call", e.toolCallId],
    ] as const
  )
    .filter(([, v]) => v !== null)
    .map(([k, v]) => `${k}=${v}`);
  return [
    String(e.id),
    e.at,
    e.principal ?? "-",
    e.action,
    e.decision ?? "-",
    ...(e.code !== null ? [`code=${e.code}`] : []),
    ...ids,
    ...(Object.keys(e.details).length > 0 ? [JSON.stringify(e.details)] : []),
  ].join("  ");
}

/**
 * The page's rows, newest first; when there are older rows, the last line is the command that
 * continues (the same filters and limit, `--before` the page's `next`).
 */
export function formatAuditPage(page: AuditPage, opts: AuditOptions): string[] {
  const lines = page.entries.length === 0 ? ["no audit rows"] : page.entries.map(formatAuditEntry);
  if (page.next === null) return lines;
  const args = [
    ...(opts.session !== undefined ? ["--session", opts.session] : []),
    ...(opts.project !== undefined ? ["--project", opts.project] : []),
    ...(opts.limit !== undefined ? ["--limit", opts.limit] : []),
    "--before",
    String(page.next),
  ];
  return [...lines, `more: pihost audit ${args.join(" ")}`];
}
