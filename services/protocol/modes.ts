// The operating mode and the permission modes as plain lists (no TypeBox, so the CLI loads them
// cheaply); values.ts holds their schemas and the compiler keeps the two equal.

export const OPERATING_MODES = ["agent", "plan"] as const;
/** The operating mode of a session: Agent or Plan (the one `Mode`; machines import it as a type). */
export type Mode = (typeof OPERATING_MODES)[number];

/** The permission modes that decide tool calls: an approval's target, an app default, `inherit` resolved. */
export const EXECUTION_PERMISSION_MODES = ["ask", "accept-edits", "auto"] as const;
export type ExecutionPermissionMode = (typeof EXECUTION_PERMISSION_MODES)[number];

/** Values a session may store. `inherit` defers to the app default, then `ask`. */
export const PERMISSION_MODES = ["inherit", ...EXECUTION_PERMISSION_MODES] as const;
export type PermissionMode = (typeof PERMISSION_MODES)[number];
