// Picks the pi-ai model for a turn's ModelConfig: the scripted provider, or a model of the worker's
// catalogue (models-config.ts). The client's config names provider and model only; endpoint, headers
// and key come from the catalogue. A config that cannot run is a value with a code, not a throw.
import type { Api, Model } from "@mariozechner/pi-ai";
import type { ModelConfig } from "../protocol/schemas.ts";
import type { ModelRegistry } from "./models-config.ts";
import { createScriptedModel, SCRIPTED_PROVIDER, scriptFor } from "./scripted-provider.ts";

export const MODEL_NOT_CONFIGURED = "MODEL_NOT_CONFIGURED";

export type ResolvedModel =
  | {
      ok: true;
      model: Model<Api>;
      getApiKey: ((provider: string) => string | undefined) | undefined;
      /** Releases what the model registered (the scripted provider's registry entry). */
      dispose(): void;
    }
  | { ok: false; code: typeof MODEL_NOT_CONFIGURED; error: string };

export interface ModelTurnContext {
  sessionId: string;
  turnId: string;
  scriptedCallLog?: string | undefined;
}

function notConfigured(error: string): ResolvedModel {
  return { ok: false, code: MODEL_NOT_CONFIGURED, error };
}

/** Resolves the model; refuses an unknown provider/model or a provider without an API key. */
export function resolveModel(
  config: ModelConfig,
  turn: ModelTurnContext,
  models: ModelRegistry,
): ResolvedModel {
  if (config.provider === SCRIPTED_PROVIDER) {
    const script = scriptFor(config);
    if (!script) {
      return notConfigured(`scripted model "${config.model}" has no script (only "demo" has a built-in one)`);
    }
    const scripted = createScriptedModel({
      sessionId: turn.sessionId,
      turnId: turn.turnId,
      modelId: config.model,
      script,
      callLogPath: turn.scriptedCallLog,
    });
    return { ok: true, model: scripted.model, getApiKey: undefined, dispose: scripted.unregister };
  }
  const found = models.lookup(config.provider, config.model);
  if (!found.ok) {
    // The text reaches the client: it names the setting, never the worker's file path.
    const where = models.source
      ? " (neither in the worker's PI_MODELS_JSON nor built into pi-ai)"
      : " (the worker has no PI_MODELS_JSON; not built into pi-ai)";
    return notConfigured(`${found.error}${found.reason === "unknown-provider" ? where : ""}`);
  }
  const { model, apiKey } = found;
  if (!apiKey) {
    return notConfigured(
      `no API key for provider ${config.provider} in the agent worker's configuration (apiKey in PI_MODELS_JSON, or the provider's usual environment variable)`,
    );
  }
  // The key answers for this model's provider only; pi's loop asks with model.provider.
  return {
    ok: true,
    model,
    getApiKey: (provider) => (provider === model.provider ? apiKey : undefined),
    dispose: () => {},
  };
}
