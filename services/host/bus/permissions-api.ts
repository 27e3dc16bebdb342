// Client methods `permissions.pending` and `permissions.resolve` (docs/protocol.md, "Permission
// prompts"): decode, check the principal, then the permission gate. Merged into the host's client
// handler map next to client-api.ts.
import { ok } from "../../protocol/result.ts";
import type { ClientHandlers } from "./request-context.ts";
import type { PermissionGate } from "../sessions/pipeline/permission-gate.ts";

export function createPermissionsApi(deps: { gate: PermissionGate }): ClientHandlers<"permissions"> {
  const { gate } = deps;
  return {
    // A named session was gated by the bus (gates.ts); without one the list is the caller's own.
    "permissions.pending": async (principal, p) => ok(await gate.pending(principal, p)),

    // The request's approver is checked by the gate under the request's row.
    "permissions.resolve": (principal, p) => gate.resolve(principal, p),
  };
}
