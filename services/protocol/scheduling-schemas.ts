// Wire schemas of the settings and scheduled-task methods (docs/protocol.md, "Settings and scheduled
// tasks") and their result shapes. Decoded with decodeParams like every other request body.
import { type Static, Type } from "typebox";
import { ModelConfig, OperatingMode, PermissionMode } from "./schemas.ts";

const Id = Type.String({ pattern: "^[A-Za-z0-9_-]{1,64}$" });

/** An app default permission mode: `inherit` is a session value only, never an app default. */
export const DefaultPermissionMode = Type.Union([
  Type.Literal("ask"),
  Type.Literal("accept-edits"),
  Type.Literal("auto"),
]);
export type DefaultPermissionMode = Static<typeof DefaultPermissionMode>;

export const SettingsSetParams = Type.Object(
  {
    defaultMode: Type.Optional(OperatingMode),
    defaultPermissionMode: Type.Optional(DefaultPermissionMode),
  },
  { additionalProperties: false },
);
export type SettingsSetParams = Static<typeof SettingsSetParams>;

export interface SettingsView {
  defaultMode: OperatingMode;
  defaultPermissionMode: DefaultPermissionMode;
}

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

export const ScheduledRunsParams = Type.Object(
  { taskId: Id, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500 })) },
  { additionalProperties: false },
);

export type ScheduledRunStatus = "claimed" | "running" | "completed" | "failed" | "missed";
export type ScheduledRunTrigger = "schedule" | "manual";

export interface ScheduledTaskView {
  id: string;
  name: string;
  owner: string;
  projectId: string;
  cron: string;
  timezone: string;
  prompt: string;
  mode: OperatingMode;
  permissionMode: PermissionMode;
  model: { provider: string; model: string };
  enabled: boolean;
  /** The next occurrence the scheduler will claim; null while disabled. */
  nextRunAt: string | null;
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface ScheduledRunView {
  runId: string;
  taskId: string;
  trigger: ScheduledRunTrigger | null;
  status: ScheduledRunStatus;
  scheduledFor: string;
  claimedBy: string | null;
  startedAt: string | null;
  endedAt: string | null;
  sessionId: string | null;
  turnId: string | null;
  errorCode: string | null;
}
