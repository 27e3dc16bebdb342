// Wire schemas of the settings and scheduled-task methods (docs/protocol.md, "Settings and scheduled
// tasks") and their result shapes. Decoded with decodeParams like every other request body.
import { type Static, Type } from "typebox";
import {
  ExecutionPermissionMode,
  Id,
  ModelConfig,
  ModelName,
  Nullable,
  OperatingMode,
  PermissionMode,
  Timestamp,
} from "./values.ts";
import { PageCursor, PageNext } from "./pages.ts";

/** An app default permission mode: `inherit` is a session value only, never an app default. */
export const DefaultPermissionMode = ExecutionPermissionMode;
export type DefaultPermissionMode = ExecutionPermissionMode;

export const SettingsSetParams = Type.Object(
  {
    defaultMode: Type.Optional(OperatingMode),
    defaultPermissionMode: Type.Optional(DefaultPermissionMode),
  },
  { additionalProperties: false },
);
export type SettingsSetParams = Static<typeof SettingsSetParams>;

export const SettingsView = Type.Object({
  defaultMode: OperatingMode,
  defaultPermissionMode: DefaultPermissionMode,
});
export type SettingsView = Static<typeof SettingsView>;

const Name = Type.String({ minLength: 1, maxLength: 200 });
/** Five cron fields (minute hour day-of-month month day-of-week); checked further by the host. */
const Cron = Type.String({ minLength: 1, maxLength: 200 });
/** An IANA time zone name such as `Europe/Berlin` or `UTC`; checked further by the host. */
const TimeZone = Type.String({ minLength: 1, maxLength: 64 });
const Prompt = Type.String({ minLength: 1, maxLength: 200_000 });

export const ScheduledCreateParams = Type.Object(
  {
    name: Name,
    cron: Cron,
    timezone: TimeZone,
    projectId: Id,
    prompt: Prompt,
    /** Default `agent`, never the app default mode. */
    mode: Type.Optional(OperatingMode),
    /** Default `inherit` (the app default at tool time, else ask). */
    permissionMode: Type.Optional(PermissionMode),
    model: Type.Optional(ModelConfig),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ScheduledCreateParams = Static<typeof ScheduledCreateParams>;

export const ScheduledUpdateParams = Type.Object(
  {
    taskId: Id,
    name: Type.Optional(Name),
    cron: Type.Optional(Cron),
    timezone: Type.Optional(TimeZone),
    projectId: Type.Optional(Id),
    prompt: Type.Optional(Prompt),
    mode: Type.Optional(OperatingMode),
    permissionMode: Type.Optional(PermissionMode),
    model: Type.Optional(ModelConfig),
    enabled: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ScheduledUpdateParams = Static<typeof ScheduledUpdateParams>;

export const ScheduledTaskRef = Type.Object({ taskId: Id }, { additionalProperties: false });

/** Runs in one scheduled.runs page at most (the page is bounded in bytes as every list is). */
export const SCHEDULED_RUNS_MAX_ROWS = 500;
/** scheduled.runs: newest occurrence first, paged by `before` (default 100 runs). */
export const ScheduledRunsParams = Type.Object(
  {
    taskId: Id,
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SCHEDULED_RUNS_MAX_ROWS })),
    before: Type.Optional(PageCursor),
  },
  { additionalProperties: false },
);
export type ScheduledRunsParams = Static<typeof ScheduledRunsParams>;

const RunStatusSchema = Type.Union([
  Type.Literal("claimed"),
  Type.Literal("running"),
  Type.Literal("completed"),
  Type.Literal("failed"),
  Type.Literal("missed"),
]);
export type ScheduledRunStatus = Static<typeof RunStatusSchema>;
const RunTriggerSchema = Type.Union([Type.Literal("schedule"), Type.Literal("manual")]);
export type ScheduledRunTrigger = Static<typeof RunTriggerSchema>;

export const ScheduledTaskView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  owner: Type.String(),
  projectId: Type.String(),
  cron: Type.String(),
  timezone: Type.String(),
  prompt: Type.String(),
  mode: OperatingMode,
  permissionMode: PermissionMode,
  model: ModelName,
  enabled: Type.Boolean(),
  /** The next occurrence the scheduler will claim; null while disabled. */
  nextRunAt: Nullable(Timestamp),
  version: Type.Integer(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
export type ScheduledTaskView = Static<typeof ScheduledTaskView>;

export const ScheduledRunView = Type.Object({
  runId: Type.String(),
  taskId: Type.String(),
  trigger: Nullable(RunTriggerSchema),
  status: RunStatusSchema,
  scheduledFor: Timestamp,
  claimedBy: Nullable(Type.String()),
  startedAt: Nullable(Timestamp),
  endedAt: Nullable(Timestamp),
  sessionId: Nullable(Type.String()),
  turnId: Nullable(Type.String()),
  /** An ErrorCode; typed as a string until the schedule store reads it as one. */
  errorCode: Nullable(Type.String()),
});
export type ScheduledRunView = Static<typeof ScheduledRunView>;

export const ScheduledTaskList = Type.Object({ tasks: Type.Array(ScheduledTaskView), next: PageNext });
export const ScheduledRunList = Type.Object({ runs: Type.Array(ScheduledRunView), next: PageNext });
export const ScheduledDeleted = Type.Object({ taskId: Type.String(), deleted: Type.Literal(true) });
