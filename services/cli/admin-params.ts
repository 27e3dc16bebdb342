// Maps the options of `pihost settings|scheduled|plugins|audit` to request bodies of the bus contract.
// Pure: files (--prompt-file, --script, a manifest) are read by the caller and passed in. Only values
// the CLI can judge alone are refused here (UsageError, exit 2, nothing sent); cron expressions, time
// zones and ids go to the host as given, which validates them.
// Type-only imports: loading the schema modules (TypeBox) would slow every CLI start.
import type { ParamsOf } from "../protocol/methods.ts";
import { EXECUTION_PERMISSION_MODES } from "../protocol/modes.ts";
import type { ModelConfig } from "../protocol/schemas.ts";
import { UsageError } from "./cli-error.ts";
import { operatingMode, parseModelSpec, permissionMode, scriptFromJson } from "./cli-params.ts";

/** Rows of one audit page at most (AUDIT_PAGE_MAX_ROWS in audit-schemas.ts). */
export const AUDIT_LIMIT_MAX = 200;
/** Runs of one `scheduled.runs` reply at most (ScheduledRunsParams). */
export const RUNS_LIMIT_MAX = 500;

/** A whole number in [min, max], or a UsageError naming the option. */
export function wholeNumber(value: string, what: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(
      `${what} must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}`,
    );
  return n;
}

/** `on` or `off` as a boolean, or a UsageError naming the option. */
export function onOff(value: string, what: string): boolean {
  if (value === "on") return true;
  if (value === "off") return false;
  throw new UsageError(`${what} must be on or off, got ${JSON.stringify(value)}`);
}

/** `settings set` options to a settings.set body; `inherit` is a session value, never an app default. */
export function settingsSetParams(opts: {
  defaultMode?: string | undefined;
  defaultPermissionMode?: string | undefined;
}): ParamsOf<"settings.set"> {
  const body: ParamsOf<"settings.set"> = {};
  if (opts.defaultMode !== undefined) body.defaultMode = operatingMode(opts.defaultMode, "--default-mode");
  if (opts.defaultPermissionMode !== undefined) {
    const v = opts.defaultPermissionMode;
    if (!(EXECUTION_PERMISSION_MODES as readonly string[]).includes(v))
      throw new UsageError(
        `--default-permission-mode must be one of ${EXECUTION_PERMISSION_MODES.join(", ")} (inherit is a session value only), got ${JSON.stringify(v)}`,
      );
    body.defaultPermissionMode = v as (typeof EXECUTION_PERMISSION_MODES)[number];
  }
  if (Object.keys(body).length === 0)
    throw new UsageError("nothing to change: give --default-mode or --default-permission-mode");
  return body;
}

/** The options `scheduled create` and `scheduled update` share, as commander parses them. */
export interface TaskOptions {
  name?: string | undefined;
  cron?: string | undefined;
  timezone?: string | undefined;
  project?: string | undefined;
  prompt?: string | undefined;
  mode?: string | undefined;
  permissionMode?: string | undefined;
  model?: string | undefined;
  enabled?: string | undefined;
}

/** What the caller read for the file options: --prompt-file's text and --script's parsed JSON. */
export interface TaskFiles {
  promptFile?: { file: string; text: string } | undefined;
  script?: { file: string; steps: unknown } | undefined;
}

type TaskFields = Omit<ParamsOf<"scheduled.update">, "taskId">;

function taskFields(opts: TaskOptions, files: TaskFiles): TaskFields {
  const body: TaskFields = {};
  if (opts.name !== undefined) body.name = opts.name;
  if (opts.cron !== undefined) body.cron = opts.cron;
  if (opts.timezone !== undefined) body.timezone = opts.timezone;
  if (opts.project !== undefined) body.projectId = opts.project;
  if (opts.prompt !== undefined && files.promptFile !== undefined)
    throw new UsageError("--prompt and --prompt-file exclude each other");
  if (opts.prompt !== undefined) body.prompt = opts.prompt;
  if (files.promptFile !== undefined) body.prompt = files.promptFile.text;
  if (body.prompt === "") throw new UsageError("the prompt must not be empty");
  if (opts.mode !== undefined) body.mode = operatingMode(opts.mode, "--mode");
  if (opts.permissionMode !== undefined)
    body.permissionMode = permissionMode(opts.permissionMode, "--permission-mode");
  if (opts.model !== undefined && files.script !== undefined)
    throw new UsageError("--model and --script exclude each other");
  if (opts.model !== undefined) body.model = parseModelSpec(opts.model);
  if (files.script !== undefined) body.model = scriptedModel(files.script);
  if (opts.enabled !== undefined) body.enabled = onOff(opts.enabled, "--enabled");
  return body;
}

function scriptedModel(script: { file: string; steps: unknown }): ModelConfig {
  return { provider: "scripted", model: "script", script: scriptFromJson(script.steps, script.file) };
}

/** `scheduled create` options to a scheduled.create body: name, cron, zone, project and prompt are required. */
export function scheduledCreateParams(
  opts: TaskOptions,
  files: TaskFiles = {},
): ParamsOf<"scheduled.create"> {
  const f = taskFields(opts, files);
  const missing = [
    f.name === undefined && "--name",
    f.cron === undefined && "--cron",
    f.timezone === undefined && "--timezone",
    f.projectId === undefined && "--project",
    f.prompt === undefined && "--prompt or --prompt-file",
  ].filter((m): m is string => typeof m === "string");
  if (missing.length > 0) throw new UsageError(`scheduled create needs ${missing.join(", ")}`);
  const { name, cron, timezone, projectId, prompt, ...rest } = f;
  return {
    name: name as string,
    cron: cron as string,
    timezone: timezone as string,
    projectId: projectId as string,
    prompt: prompt as string,
    ...rest,
  };
}

/** `scheduled update` options to a scheduled.update body; refuses a request that changes nothing. */
export function scheduledUpdateParams(
  taskId: string,
  opts: TaskOptions,
  files: TaskFiles = {},
): ParamsOf<"scheduled.update"> {
  const f = taskFields(opts, files);
  if (Object.keys(f).length === 0)
    throw new UsageError(
      "nothing to change: give --name, --cron, --timezone, --project, --prompt, --prompt-file, --mode, --permission-mode, --model, --script or --enabled",
    );
  return { taskId, ...f };
}

/** `scheduled runs` options to a scheduled.runs body. */
/** The options of `pihost audit`, as commander parses them. */
export interface AuditOptions {
  session?: string | undefined;
  project?: string | undefined;
  before?: string | undefined;
  limit?: string | undefined;
}

/** `audit` options to an audit.list body. */
export function auditListParams(opts: AuditOptions): ParamsOf<"audit.list"> {
  const body: ParamsOf<"audit.list"> = {};
  if (opts.session !== undefined) body.sessionId = opts.session;
  if (opts.project !== undefined) body.projectId = opts.project;
  if (opts.before !== undefined)
    body.before = wholeNumber(opts.before, "--before", 1, Number.MAX_SAFE_INTEGER);
  if (opts.limit !== undefined) body.limit = wholeNumber(opts.limit, "--limit", 1, AUDIT_LIMIT_MAX);
  return body;
}

/** A manifest file's parsed JSON to a plugins.register body; the host checks the manifest itself. */
export function pluginsRegisterParams(value: unknown, file: string): ParamsOf<"plugins.register"> {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new UsageError(`${file} must hold a JSON object (a plugin manifest: id, name, tools)`);
  // A file holding `{"manifest": {...}}` (the request body itself) is taken as is.
  const inner = (value as { manifest?: unknown }).manifest;
  const manifest = typeof inner === "object" && inner !== null && !Array.isArray(inner) ? inner : value;
  return { manifest: manifest as ParamsOf<"plugins.register">["manifest"] };
}
