// Client method `audit.list` (docs/protocol.md, "Audit"): decode, then one page of the rows the
// caller may read (settings admins: every row). Merged into the client handler map.
import { ok } from "../../protocol/result.ts";
import { auditPage } from "../store/audit-query.ts";
import type { Db } from "../store/db.ts";
import type { ClientHandlers } from "./request-context.ts";
import type { SettingsAdmins } from "./settings-admins.ts";

export function createAuditApi(deps: { db: Db } & SettingsAdmins): ClientHandlers<"audit"> {
  return {
    // Development mode takes the principal as given: it reads like anyone else, not as an admin.
    "audit.list": async (principal, p) =>
      ok(await auditPage(deps.db, principal, deps.settingsAdmins.includes(principal), p)),
  };
}
