// Client methods `projects.*` (docs/protocol.md, "Projects"): decode, check the principal, then the
// project store. Changing a project's tool settings widens what its sandboxes reach, so it follows
// the rule of settings.set (settings-admins.ts). Only members see a project; only its owner changes
// its members (docs/security.md "Projects have owners and members"). Merged into the client handler map.
import { AppError } from "../../protocol/app-error.ts";
import { ok, refuse, type Result } from "../../protocol/result.ts";
import type { ClientHandlers } from "./request-context.ts";
import type { SettingsAdmins } from "./settings-admins.ts";
import type { ProjectStore } from "../store/project-store.ts";
import {
  type AccessSettings,
  checkSandboxAccess,
  grantSandboxAccess,
  manualGrantCommand,
} from "../tools/workspace-access.ts";

export function createProjectsApi(
  deps: {
    store: ProjectStore;
    /** The sandbox user's settings: a workspace it cannot use is granted or refused at create. */
    sandbox?: AccessSettings;
    /** PI_SANDBOX_GRANT_ACL: grant through POSIX ACLs instead of refusing. */
    grantAcl?: boolean;
  } & SettingsAdmins,
): ClientHandlers<"projects"> {
  const { store } = deps;

  /**
   * The sandbox user must be able to enter, read and write the root, or Bash and the file tools
   * could never run there: grant it (setting on) or refuse WORKSPACE_NOT_USABLE naming the fix.
   * A host without a usable sandbox user skips the check (every sandboxed call says why itself).
   */
  async function ensureUsable(
    root: string,
    configuredRoot: string,
  ): Promise<Result<Record<string, unknown>>> {
    if (!deps.sandbox) return ok({});
    const access = await checkSandboxAccess(root, deps.sandbox).catch((err: unknown) => {
      if (err instanceof AppError && err.code === "SANDBOX_UNAVAILABLE") return null;
      throw err;
    });
    if (access === null || access.ok) return ok({});
    if (deps.grantAcl) {
      const g = await grantSandboxAccess(root, configuredRoot, deps.sandbox);
      return ok({ aclGranted: { entries: g.granted, searchOnly: g.searchOnly, skipped: g.skipped } });
    }
    const command = manualGrantCommand(root, deps.sandbox.user);
    return refuse(
      "WORKSPACE_NOT_USABLE",
      `${access.reason}, so Bash and the file tools could not run in ${root}. Fix: start the host with PI_SANDBOX_GRANT_ACL=1 (it grants through POSIX ACLs), or grant by hand: ${command}`,
      { path: access.path, missing: access.missing, user: deps.sandbox.user, command },
    );
  }

  return {
    "projects.create": async (principal, p) => {
      // Another project's root is named only to its owner and to settings admins.
      const mayView = (owner: string) =>
        owner === principal || deps.devMode || deps.settingsAdmins.includes(principal);
      // Only a folder the caller may open (PI_WORKSPACE_ACCESS), checked on its real path; then
      // overlaps: nothing is granted on a root that could never be a project.
      const resolved = await store.resolveRoot(principal, p.workspaceRoot);
      if (!resolved.ok) return resolved;
      const { root, configuredRoot } = resolved.value;
      const overlap = await store.noOverlap(root, mayView);
      if (!overlap.ok) return overlap;
      const usable = await ensureUsable(root, configuredRoot);
      if (!usable.ok) return usable;
      return store.create(principal, p.name, root, { mayView, audit: usable.value });
    },

    // Membership and ownership are checked by the store under the project's row (gates.ts).
    "projects.get": (principal, p) => store.get(principal, p.projectId),

    "projects.list": async (principal, p) => ok(await store.listForMember(principal, p)),

    "projects.members.list": (principal, p) => store.members.list(principal, p.projectId, p),

    "projects.members.add": (principal, p) => store.members.add(principal, p.projectId, p.principal),

    "projects.members.remove": (principal, p) => store.members.remove(principal, p.projectId, p.principal),

    "projects.leave": (principal, p) => store.members.leave(principal, p.projectId),

    // A settings admin's (the gate, gates.ts).
    "projects.configure": (principal, p) => store.configure(principal, p),
  };
}
