// Client method `audit.list` (docs/protocol.md, "Audit"): decode, then one page of the rows the
// caller may read (settings admins: every row). Merged into the client handler map.
import { AuditListParams } from "../../protocol/audit-schemas.ts";
import type { AuditMethod } from "../../protocol/methods.ts";
import { decodeParams } from "../../protocol/schemas.ts";
import { auditPage } from "../store/audit-query.ts";
import type { Db } from "../store/db.ts";
import type { ClientHandler } from "./client-api.ts";
import type { SettingsAdmins } from "./settings-admins.ts";

export function createAuditApi(deps: { db: Db } & SettingsAdmins): Record<AuditMethod, ClientHandler> {
  return {
    "audit.list": async (principal, params) => {
      const p = decodeParams(AuditListParams, params);
      // Development mode takes the principal as given: it reads like anyone else, not as an admin.
      return auditPage(deps.db, principal, deps.settingsAdmins.includes(principal), p);
    },
  };
}
