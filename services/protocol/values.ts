// The value types every part of the contract shares: the one id/token rule, the operating mode, the
// permission modes and the model configuration, as TypeBox schemas and their types.
import { type Static, type TSchema, Type } from "typebox";
import type { ErrorCode } from "./error-codes.ts";
import type * as Modes from "./modes.ts";
import { SUBJECT_TOKEN_PATTERN } from "./tokens.ts";

export { EXECUTION_PERMISSION_MODES, type Mode, OPERATING_MODES, PERMISSION_MODES } from "./modes.ts";

/** An id or principal on the wire (docs/protocol.md, "Envelope"). */
export const Id = Type.String({ pattern: SUBJECT_TOKEN_PATTERN });

/** The operating mode of a session: Agent or Plan. */
export const OperatingMode = Type.Union([Type.Literal("agent"), Type.Literal("plan")]);
export type OperatingMode = Static<typeof OperatingMode>;
/** A permission mode that decides tool calls: an approval's target, an app default, `inherit` resolved. */
export const ExecutionPermissionMode = Type.Union([
  Type.Literal("ask"),
  Type.Literal("accept-edits"),
  Type.Literal("auto"),
]);
export type ExecutionPermissionMode = Static<typeof ExecutionPermissionMode>;

/** Values a session may store. `inherit` defers to the app default, then `ask`. */
export const PermissionMode = Type.Union([
  Type.Literal("inherit"),
  Type.Literal("ask"),
  Type.Literal("accept-edits"),
  Type.Literal("auto"),
]);
export type PermissionMode = Static<typeof PermissionMode>;

/** The schemas and the plain lists of modes.ts name the same values. */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const MODE_LISTS_MATCH: [
  Same<OperatingMode, Modes.Mode>,
  Same<ExecutionPermissionMode, Modes.ExecutionPermissionMode>,
  Same<PermissionMode, Modes.PermissionMode>,
] = [true, true, true];

export type PlanningState = "inactive" | "planning" | "awaiting_approval";
export type TurnStatus = "running" | "completed" | "aborted" | "error";
export type TurnKind = "prompt" | "execution";
export type ApprovalStatus = "pending" | "approved" | "rejected" | "expired" | "interrupted";
export type ExecutionState = "queued" | "running" | "completed" | "interrupted";

/** One step of a scripted model (docs/protocol.md, "Shapes"): tool calls and/or text, optionally after a file appears. */
export const ScriptStep = Type.Object(
  {
    text: Type.Optional(Type.String()),
    toolCalls: Type.Optional(
      Type.Array(
        Type.Object({
          name: Type.String({ minLength: 1 }),
          args: Type.Record(Type.String(), Type.Unknown()),
        }),
        {
          maxItems: 16,
        },
      ),
    ),
    waitForFile: Type.Optional(Type.String({ minLength: 1 })),
  },
  { additionalProperties: false },
);
export type ScriptStep = Static<typeof ScriptStep>;

export const ModelConfig = Type.Object(
  {
    provider: Type.String({ minLength: 1, maxLength: 64 }),
    model: Type.String({ minLength: 1, maxLength: 128 }),
    script: Type.Optional(Type.Array(ScriptStep, { maxItems: 1000 })),
  },
  { additionalProperties: false },
);
export type ModelConfig = Static<typeof ModelConfig>;

/** The model as views show it: provider and model name, never the script. */
export const ModelName = Type.Object({ provider: Type.String(), model: Type.String() });

/** An ISO-8601 timestamp as the host writes it. */
export const Timestamp = Type.String();
export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** An error code in a view or result: a string on the wire, `ErrorCode` to the compiler. */
export const ErrorCodeString = Type.Unsafe<ErrorCode>(Type.String());
