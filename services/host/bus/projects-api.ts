// Client methods `projects.*` (docs/protocol.md, "Projects"): decode, check the principal, then the
// project store. Changing a project's tool settings widens what its sandboxes reach, so it follows
// the rule of settings.set (settings-admins.ts). Merged into the client handler map.
import { ProjectCreateParams, ProjectRef, ProjectsConfigureParams } from "../../protocol/project-schemas.ts";
import { decodeParams } from "../../protocol/schemas.ts";
import type { ProjectMethod } from "../../protocol/subjects.ts";
import type { ClientHandler } from "./client-api.ts";
import { requireSettingsAdmin, type SettingsAdmins } from "./settings-admins.ts";
import type { ProjectStore } from "../store/project-store.ts";

export function createProjectsApi(
  deps: {
    store: ProjectStore;
  } & SettingsAdmins,
): Record<ProjectMethod, ClientHandler> {
  const { store } = deps;
  return {
    "projects.create": async (principal, params) => {
      const p = decodeParams(ProjectCreateParams, params);
      return store.create(principal, p.name, p.workspaceRoot);
    },

    "projects.get": async (_principal, params) => {
      const p = decodeParams(ProjectRef, params);
      return store.get(p.projectId);
    },

    "projects.configure": async (principal, params) => {
      const p = decodeParams(ProjectsConfigureParams, params);
      requireSettingsAdmin(deps, principal, "change a project's network or preview origins");
      return store.configure(principal, p);
    },
  };
}
