import { describe, expect, it } from "vitest";
import type { AuditEntryView } from "../protocol/audit-schemas.ts";
import type { PluginView } from "../protocol/plugin-schemas.ts";
import type { ScheduledRunView, ScheduledTaskView } from "../protocol/scheduling-schemas.ts";
import {
  formatAuditEntry,
  formatAuditPage,
  formatMembers,
  formatPlugin,
  formatPluginList,
  formatRunList,
  formatSettings,
  formatTask,
  formatTaskList,
} from "./admin-format.ts";

const task: ScheduledTaskView = {
  id: "task_1",
  name: "nightly\nreview",
  owner: "alice",
  projectId: "prj_1",
  cron: "0 9 * * 1-5",
  timezone: "Europe/Berlin",
  prompt: "line one\nline two",
  mode: "agent",
  permissionMode: "inherit",
  model: { provider: "scripted", model: "demo" },
  enabled: true,
  nextRunAt: "2030-01-01T08:00:00.000Z",
  version: 2,
  createdAt: "2029-12-31T00:00:00.000Z",
  updatedAt: "2029-12-31T01:00:00.000Z",
};

const entry: AuditEntryView = {
  id: 57,
  at: "2030-01-01T00:00:00.000Z",
  principal: "alice",
  sessionId: "ses_1",
  projectId: "prj_1",
  turnId: null,
  toolCallId: null,
  action: "session.create",
  decision: null,
  code: null,
  details: { mode: "agent" },
};

describe("admin views", () => {
  it("settings are two aligned lines", () => {
    expect(formatSettings({ defaultMode: "plan", defaultPermissionMode: "ask" })).toEqual([
      "default mode:            plan",
      "default permission mode: ask",
    ]);
  });

  it("a task's free text stays on its line, quoted", () => {
    const lines = formatTask(task);
    expect(lines[0]).toBe('task task_1 "nightly\\nreview"');
    expect(lines).toContain('  prompt:      "line one\\nline two"');
    expect(lines).toContain("  schedule:    0 9 * * 1-5 (Europe/Berlin)");
    expect(lines.every((l) => !l.includes("\n"))).toBe(true);
    expect(formatTaskList([task, { ...task, id: "task_2", enabled: false, nextRunAt: null }])).toEqual([
      'task_1  enabled   0 9 * * 1-5 (Europe/Berlin)  next 2030-01-01T08:00:00.000Z  agent/inherit  project prj_1  "nightly\\nreview"',
      'task_2  disabled  0 9 * * 1-5 (Europe/Berlin)  next none  agent/inherit  project prj_1  "nightly\\nreview"',
    ]);
    expect(formatTaskList([])).toEqual(["no scheduled tasks"]);
  });

  it("runs: one line each, the error code when there is one", () => {
    const run: ScheduledRunView = {
      runId: "run_1",
      taskId: "task_1",
      trigger: "manual",
      status: "failed",
      scheduledFor: "2030-01-01T08:00:00.000Z",
      claimedBy: "host-1",
      startedAt: null,
      endedAt: "2030-01-01T08:00:01.000Z",
      sessionId: null,
      turnId: null,
      errorCode: "PLAN_REQUIRES_INTERACTIVE_SESSION",
    };
    expect(formatRunList([run])).toEqual([
      "run_1  failed  manual  scheduled for 2030-01-01T08:00:00.000Z  session -  turn -  error PLAN_REQUIRES_INTERACTIVE_SESSION  ended 2030-01-01T08:00:01.000Z",
    ]);
    expect(formatRunList([])).toEqual(["no runs"]);
  });

  it("plugins: state, tools and risks", () => {
    const p: PluginView = {
      id: "echo",
      name: "Echo",
      enabled: false,
      tools: [{ name: "echo", description: "Echo it.", parameters: {}, risk: "medium" }],
      registeredBy: "alice",
      createdAt: "t0",
      updatedAt: "t1",
    };
    expect(formatPlugin(p)).toEqual([
      'plugin echo "Echo": disabled, registered by alice, updated t1',
      '  tool echo (medium risk): "Echo it."',
    ]);
    expect(formatPluginList([p])).toEqual(['echo  disabled  1 tool: echo (medium)  "Echo"']);
    expect(formatPluginList([])).toEqual(["no plugins registered"]);
  });

  it("members: the owner first, who added each", () => {
    expect(
      formatMembers({
        projectId: "prj_1",
        owner: "alice",
        members: [
          { principal: "alice", addedBy: null, addedAt: "t0" },
          { principal: "bob", addedBy: "alice", addedAt: "t1" },
        ],
      }),
    ).toEqual([
      "project prj_1: owner alice, 2 members",
      "  alice  owner  added t0",
      "  bob  member  added t1 by alice",
    ]);
  });

  it("audit: one line per row; the continuing command keeps the filters", () => {
    expect(formatAuditEntry(entry)).toBe(
      '57  2030-01-01T00:00:00.000Z  alice  session.create  -  session=ses_1  project=prj_1  {"mode":"agent"}',
    );
    expect(
      formatAuditEntry({ ...entry, details: {}, code: "FORBIDDEN", decision: "deny", principal: null }),
    ).toBe(
      "57  2030-01-01T00:00:00.000Z  -  session.create  deny  code=FORBIDDEN  session=ses_1  project=prj_1",
    );
    expect(formatAuditPage({ entries: [entry], next: null }, {})).toHaveLength(1);
    expect(formatAuditPage({ entries: [entry], next: 57 }, { session: "ses_1", limit: "1" }).at(-1)).toBe(
      "more: pihost audit --session ses_1 --limit 1 --before 57",
    );
    expect(formatAuditPage({ entries: [], next: null }, {})).toEqual(["no audit rows"]);
  });
});
