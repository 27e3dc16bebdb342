// Picks the pi-ai model for a turn's ModelConfig: the scripted provider, or a real provider whose API
// key comes from this worker's environment. A config that cannot run is a value, not a throw.
import { type Api, getEnvApiKey, getModel, type KnownProvider, type Model } from "@mariozechner/pi-ai";
import type { ModelConfig } from "../protocol/schemas.ts";
import { createScriptedModel, SCRIPTED_PROVIDER, scriptFor } from "./scripted-provider.ts";

export type ResolvedModel =
  | {
      ok: true;
      model: Model<Api>;
      getApiKey: ((provider: string) => string | undefined) | undefined;
      /** Releases what the model registered (the scripted provider's registry entry). */
      dispose(): void;
    }
  | { ok: false; error: string };

export interface ModelTurnContext {
  sessionId: string;
  turnId: string;
  scriptedCallLog?: string | undefined;
}

/** Resolves the model; refuses an unknown provider/model or a provider without an API key. */
export function resolveModel(config: ModelConfig, turn: ModelTurnContext): ResolvedModel {
  if (config.provider === SCRIPTED_PROVIDER) {
    const script = scriptFor(config);
    if (!script) {
      return {
        ok: false,
        error: `scripted model "${config.model}" has no script (only "demo" has a built-in one)`,
      };
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
  const model = getModel(config.provider as KnownProvider, config.model as never) as Model<Api> | undefined;
  if (!model) return { ok: false, error: `unknown model ${config.provider}/${config.model}` };
  if (!getEnvApiKey(config.provider)) {
    return {
      ok: false,
      error: `no API key for provider ${config.provider} in the agent worker's environment`,
    };
  }
  return { ok: true, model, getApiKey: (provider) => getEnvApiKey(provider), dispose: () => {} };
}
