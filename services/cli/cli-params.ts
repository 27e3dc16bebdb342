// Maps parsed command-line values to request bodies of the bus contract. Pure: no NATS, no files
// (a --script file is read by the caller and passed in as parsed JSON). Refusals are UsageErrors.
import type { Static } from "typebox";
import path from "node:path";
// Type-only imports: loading schemas.ts (the TypeBox compilers) would slow every CLI start.
import type { ParamsOf } from "../protocol/methods.ts";
import { EXECUTION_PERMISSION_MODES, OPERATING_MODES as MODES } from "../protocol/modes.ts";
import type {
  ModelConfig,
  OperatingMode,
  PermissionMode,
  ProposalView,
  ScriptStep,
  SessionCreateParams,
} from "../protocol/schemas.ts";
import { UsageError } from "./cli-error.ts";

export const OPERATING_MODES: readonly OperatingMode[] = MODES;
/** The session permission modes in the CLI's order (`inherit` last). */
export const PERMISSION_MODES: readonly PermissionMode[] = [...EXECUTION_PERMISSION_MODES, "inherit"];
/** The approve target modes: the shared list of execution permission modes. */
export const APPROVE_MODES = EXECUTION_PERMISSION_MODES;

export const DEMO_MODEL: ModelConfig = { provider: "scripted", model: "demo" };

/** `project configure` options to a projects.configure body; refuses a request that changes nothing. */
export function projectConfigureParams(
  projectId: string,
  opts: { network?: string; previewOrigin?: string[]; clearPreviewOrigins?: boolean; expectVersion?: string },
): ParamsOf<"projects.configure"> {
  const body: ParamsOf<"projects.configure"> = { projectId };
  if (opts.network !== undefined) {
    if (opts.network !== "on" && opts.network !== "off")
      throw new UsageError(`--network must be on or off, got ${JSON.stringify(opts.network)}`);
    body.network = opts.network === "on";
  }
  if (opts.clearPreviewOrigins && opts.previewOrigin?.length)
    throw new UsageError("--clear-preview-origins and --preview-origin exclude each other");
  if (opts.clearPreviewOrigins) body.previewOrigins = [];
  else if (opts.previewOrigin?.length) body.previewOrigins = opts.previewOrigin;
  if (opts.expectVersion !== undefined) {
    const v = Number(opts.expectVersion);
    if (!Number.isInteger(v) || v < 0)
      throw new UsageError(
        `--expect-version must be a whole number, got ${JSON.stringify(opts.expectVersion)}`,
      );
    body.expectedVersion = v;
  }
  if (!("network" in body) && !("previewOrigins" in body))
    throw new UsageError("nothing to change: give --network, --preview-origin or --clear-preview-origins");
  return body;
}

export function projectCreateParams(opts: { name: string; root: string }, cwd: string) {
  return { name: opts.name, workspaceRoot: path.resolve(cwd, opts.root) };
}

/** `provider/model`; the model part may itself contain slashes (e.g. `openrouter/meta/llama`). */
export function parseModelSpec(spec: string): ModelConfig {
  const slash = spec.indexOf("/");
  if (slash <= 0 || slash === spec.length - 1) {
    throw new UsageError(`--model must be provider/model, got ${JSON.stringify(spec)}`);
  }
  return { provider: spec.slice(0, slash), model: spec.slice(slash + 1) };
}

/** Checks that a --script file holds a JSON array of steps; the host validates each step's shape. */
export function scriptFromJson(value: unknown, file: string): ScriptStep[] {
  if (!Array.isArray(value)) throw new UsageError(`--script ${file} must hold a JSON array of script steps`);
  for (const [i, step] of value.entries()) {
    if (typeof step !== "object" || step === null || Array.isArray(step)) {
      throw new UsageError(`--script ${file}: step ${i} is not an object`);
    }
  }
  return value as ScriptStep[];
}

export interface SessionCreateOptions {
  project: string;
  title?: string | undefined;
  mode?: string | undefined;
  permissionMode?: string | undefined;
  model?: string | undefined;
  demo?: boolean | undefined;
  /** The parsed content of --script, when given. */
  script?: { file: string; steps: unknown } | undefined;
  approver?: string[] | undefined;
}

/** The session.create body, as the wire schema defines it. */
export type SessionCreateBody = Static<typeof SessionCreateParams>;

/** --model, --demo and --script each choose the model; more than one is refused, none leaves the host default. */
export function sessionCreateParams(opts: SessionCreateOptions): SessionCreateBody {
  const body: SessionCreateBody = { projectId: opts.project };
  if (opts.title !== undefined) body.title = opts.title;
  if (opts.mode !== undefined) body.mode = operatingMode(opts.mode, "--mode");
  if (opts.permissionMode !== undefined)
    body.permissionMode = permissionMode(opts.permissionMode, "--permission-mode");
  const chosen = [opts.model !== undefined, opts.demo === true, opts.script !== undefined].filter(
    Boolean,
  ).length;
  if (chosen > 1) throw new UsageError("choose at most one of --model, --demo and --script");
  if (opts.model !== undefined) body.model = parseModelSpec(opts.model);
  if (opts.demo === true) body.model = { ...DEMO_MODEL };
  if (opts.script !== undefined) {
    body.model = {
      provider: "scripted",
      model: "script",
      script: scriptFromJson(opts.script.steps, opts.script.file),
    };
  }
  if (opts.approver !== undefined && opts.approver.length > 0) body.approvers = [...opts.approver];
  return body;
}

export function operatingMode(value: string, what: string): OperatingMode {
  if ((OPERATING_MODES as readonly string[]).includes(value)) return value as OperatingMode;
  throw new UsageError(`${what} must be one of ${OPERATING_MODES.join(", ")}, got ${JSON.stringify(value)}`);
}

export function permissionMode(value: string, what: string): PermissionMode {
  if ((PERMISSION_MODES as readonly string[]).includes(value)) return value as PermissionMode;
  throw new UsageError(`${what} must be one of ${PERMISSION_MODES.join(", ")}, got ${JSON.stringify(value)}`);
}

/**
 * The approve target mode is never inferred (docs/architecture.md "Plans"): a missing or other value is refused here,
 * before anything is sent, so the host's PLAN_PERMISSION_MODE_* codes are only a second line.
 */
export function approveMode(value: string | undefined): string {
  if (value === undefined || value === "") {
    throw new UsageError(`approve needs --mode ${APPROVE_MODES.join("|")}; no mode is ever assumed`);
  }
  if (!(APPROVE_MODES as readonly string[]).includes(value)) {
    throw new UsageError(`--mode must be one of ${APPROVE_MODES.join(", ")}, got ${JSON.stringify(value)}`);
  }
  return value;
}

export interface ResolveBody {
  proposalId: string;
  sessionId: string;
  turnId: string;
  toolCallId: string;
  version: number;
  action: "approve" | "reject";
  targetPermissionMode?: string;
}

/** Fills the identity fields from the proposal as read, so a stale or changed row is refused by the host. */
export function resolveParams(
  proposal: Pick<ProposalView, "proposalId" | "sessionId" | "turnId" | "toolCallId" | "version">,
  action: "approve" | "reject",
  targetPermissionMode?: string,
): ResolveBody {
  const body: ResolveBody = {
    proposalId: proposal.proposalId,
    sessionId: proposal.sessionId,
    turnId: proposal.turnId,
    toolCallId: proposal.toolCallId,
    version: proposal.version,
    action,
  };
  if (action === "approve") body.targetPermissionMode = approveMode(targetPermissionMode);
  return body;
}

/** --timeout in seconds: a positive number, at most one day. */
export function timeoutMs(value: string, flag = "--timeout"): number {
  const seconds = Number(value);
  if (!Number.isFinite(seconds) || seconds <= 0 || seconds > 86_400) {
    throw new UsageError(
      `${flag} must be a number of seconds between 0 and 86400, got ${JSON.stringify(value)}`,
    );
  }
  return Math.round(seconds * 1000);
}
