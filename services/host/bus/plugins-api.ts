// Client methods `plugins.*` (docs/protocol.md, "Plugins"): decode, check the principal (the rule of
// settings.set), then the plugin store, whose refusals (a `Result`) go back as the reply.
// Merged into the host's client handler map next to client-api.ts.
import { normaliseManifest, PluginRef, PluginsRegisterParams } from "../../protocol/plugin-schemas.ts";
import { AfterPageParams, decodeParams } from "../../protocol/schemas.ts";
import type { PluginMethod } from "../../protocol/subjects.ts";
import type { ClientHandler } from "./client-api.ts";
import { requireSettingsAdmin, type SettingsAdmins } from "./settings-admins.ts";
import type { PluginStore } from "../store/plugin-store.ts";

export function createPluginsApi(
  deps: {
    store: PluginStore;
  } & SettingsAdmins,
): Record<PluginMethod, ClientHandler> {
  const { store } = deps;
  const admin = (principal: string) => requireSettingsAdmin(deps, principal, "manage plugins");
  return {
    "plugins.register": async (principal, params) => {
      const p = decodeParams(PluginsRegisterParams, params);
      admin(principal);
      return store.register(principal, normaliseManifest(p.manifest));
    },

    "plugins.list": async (_principal, params) => {
      const page = await store.list(decodeParams(AfterPageParams, params));
      return { plugins: page.items, next: page.next };
    },

    "plugins.enable": async (principal, params) => {
      const p = decodeParams(PluginRef, params);
      admin(principal);
      return store.setEnabled(principal, p.pluginId, true);
    },

    "plugins.disable": async (principal, params) => {
      const p = decodeParams(PluginRef, params);
      admin(principal);
      return store.setEnabled(principal, p.pluginId, false);
    },
  };
}
