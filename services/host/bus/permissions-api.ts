// Client methods `permissions.pending` and `permissions.resolve` (docs/protocol.md, "Permission
// prompts"): decode, check the principal, then the permission gate. Merged into the host's client
// handler map next to client-api.ts.
import { PermissionsPendingParams, PermissionsResolveParams } from "../../protocol/permission-schemas.ts";
import { decodeParams } from "../../protocol/schemas.ts";
import type { PermissionMethod } from "../../protocol/subjects.ts";
import type { ClientHandler } from "./client-api.ts";
import type { PermissionGate } from "../sessions/permission-gate.ts";
import type { SessionStore } from "../store/session-store.ts";

export function createPermissionsApi(deps: {
  sessions: Pick<SessionStore, "accessibleRow">;
  gate: PermissionGate;
}): Record<PermissionMethod, ClientHandler> {
  const { sessions, gate } = deps;
  return {
    "permissions.pending": async (principal, params) => {
      const p = decodeParams(PermissionsPendingParams, params);
      if (p.sessionId) {
        const access = await sessions.accessibleRow(principal, p.sessionId);
        if (!access.ok) return access;
      }
      return gate.pending(principal, p);
    },

    "permissions.resolve": async (principal, params) => {
      const p = decodeParams(PermissionsResolveParams, params);
      return gate.resolve(principal, p);
    },
  };
}
