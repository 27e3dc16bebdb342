// Client methods `plugins.*` (docs/protocol.md, "Plugins"): decode, check the principal (the rule of
// settings.set), then the plugin store, whose refusals (a `Result`) go back as the reply.
// Merged into the host's client handler map next to client-api.ts.
import { normaliseManifest } from "../../protocol/plugin-schemas.ts";
import { ok } from "../../protocol/result.ts";
import type { ClientHandlers } from "./request-context.ts";
import type { PluginStore } from "../store/plugin-store.ts";

/** register, enable and disable are a settings admin's (the gate, gates.ts). */
export function createPluginsApi(deps: { store: PluginStore }): ClientHandlers<"plugins"> {
  const { store } = deps;
  return {
    "plugins.register": async (principal, p) => store.register(principal, normaliseManifest(p.manifest)),

    "plugins.list": async (_principal, p) => {
      const page = await store.list(p);
      return ok({ plugins: page.items, next: page.next });
    },

    "plugins.enable": async (principal, p) => store.setEnabled(principal, p.pluginId, true),

    "plugins.disable": async (principal, p) => store.setEnabled(principal, p.pluginId, false),
  };
}
