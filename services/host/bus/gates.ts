// The `gate` column of the METHODS table (methods.ts), checked by the bus before any handler runs
// (host-bus.ts): a caller the gate refuses never reaches the handler, and the refusal changes nothing.
// - `admin`: a settings admin (settings-admins.ts; any principal in development mode).
// - `owner` / `approver` of a request that names its session by `sessionId`: the session's row is
//   read once here (SESSION_NOT_FOUND, else FORBIDDEN) and handed to the handler (`ctx.session`).
// Gates on rows a request names otherwise (a project, a task, a plan, a permission request) are
// decided by the store that reads the row, inside the transaction that acts on it, where a
// concurrent change of members or approvers cannot slip between the check and the write
// (docs/architecture.md "The contract as one table").
import type { MethodSpec } from "../../protocol/methods.ts";
import { ok, refuse, type Result } from "../../protocol/result.ts";
import type { SessionStore } from "../store/session-store.ts";
import type { RequestContext } from "./request-context.ts";
import { settingsAdminRefusal, type SettingsAdmins } from "./settings-admins.ts";

/** What a settings admin's method changes, as its refusal names it. */
const ADMIN_WHAT: Partial<Record<MethodSpec["group"], string>> = {
  projects: "change a project's network or preview origins",
  scheduling: "change app settings",
  plugins: "manage plugins",
};

export type Gate = (
  spec: MethodSpec,
  principal: string,
  params: unknown,
  ctx: RequestContext,
) => Promise<Result<RequestContext>>;

export function createGate(deps: { sessions: Pick<SessionStore, "accessibleRow"> } & SettingsAdmins): Gate {
  return async (spec, principal, params, ctx) => {
    if (spec.gate === "admin") {
      const refusal = settingsAdminRefusal(deps, principal, ADMIN_WHAT[spec.group] ?? "change settings");
      return refusal ?? ok(ctx);
    }
    if ((spec.gate !== "owner" && spec.gate !== "approver") || spec.session !== "sessionId") return ok(ctx);
    // A list that may name a session (plans.pending, permissions.pending, events.since) is gated
    // only when it does; without one it holds the caller's own rows only.
    const sessionId = (params as { sessionId?: unknown }).sessionId;
    if (typeof sessionId !== "string") return ok(ctx);
    const access = await deps.sessions.accessibleRow(principal, sessionId);
    if (!access.ok) return access;
    if (spec.gate === "owner" && access.value.owner !== principal) return refuse("FORBIDDEN");
    return ok({ ...ctx, session: access.value });
  };
}
