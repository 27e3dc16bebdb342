// Which model a session runs (docs/models.md "What a client may choose"), the one check at every
// entry that names one (session.create, session.configure, scheduled.create, scheduled.update, and
// each scheduled run before its session exists): the client names {provider, model} or nothing;
// nothing means the deployment's default (PI_DEFAULT_MODEL), never a silent demo; a provider the
// deployment does not allow (PI_MODEL_PROVIDERS; the scripted test provider only in development mode
// or when listed) is MODEL_NOT_CONFIGURED, and so is, once workers have been heard from, a model no
// live worker serves with its key (its turns would wait forever).
import { ok, refuse, type Result } from "../../../protocol/result.ts";
import type { ModelConfig } from "../../../protocol/schemas.ts";

export const SCRIPTED_PROVIDER = "scripted";

export interface ModelChoiceConfig {
  devMode: boolean;
  /** PI_DEFAULT_MODEL as {provider, model}; development mode without one: scripted/demo, announced. */
  defaultModel: { provider: string; model: string } | null;
  /** PI_MODEL_PROVIDERS; null: every provider (the scripted one only in development mode). */
  providers: readonly string[] | null;
  /** What live workers serve (worker-registry.ts); none: no worker check. */
  workers?: { serves(provider: string, model: string): boolean | null };
}

/** `provider/model` of PI_DEFAULT_MODEL; anything else refuses to start. */
export function parseDefaultModel(raw: string | undefined): { provider: string; model: string } | null {
  if (!raw) return null;
  const slash = raw.indexOf("/");
  if (slash <= 0 || slash === raw.length - 1)
    throw new Error(`PI_DEFAULT_MODEL must be provider/model, got ${JSON.stringify(raw)}`);
  return { provider: raw.slice(0, slash), model: raw.slice(slash + 1) };
}

export function createModelChoice(config: ModelChoiceConfig) {
  const allowed = (provider: string) =>
    config.providers ? config.providers.includes(provider) : provider !== SCRIPTED_PROVIDER || config.devMode;
  const defaultModel =
    config.defaultModel ?? (config.devMode ? { provider: SCRIPTED_PROVIDER, model: "demo" } : null);
  return {
    /** The default sessions get (null: a session must name its model). */
    defaultModel,
    /** Whether sessions may use `provider` here. */
    allows: allowed,
    /** The model an entry asks for (none: the default), checked; a refusal changes nothing. */
    choose(model: ModelConfig | undefined): Result<ModelConfig> {
      const chosen = model ?? defaultModel;
      if (!chosen)
        return refuse(
          "MODEL_NOT_CONFIGURED",
          "no model was named and this deployment has no default (PI_DEFAULT_MODEL): name {provider, model}",
        );
      if (!allowed(chosen.provider))
        return refuse(
          "MODEL_NOT_CONFIGURED",
          chosen.provider === SCRIPTED_PROVIDER && !config.providers
            ? "the scripted provider is for development mode (or list it in PI_MODEL_PROVIDERS)"
            : `provider ${chosen.provider} is not one this deployment allows (PI_MODEL_PROVIDERS)`,
          { provider: chosen.provider },
        );
      if (
        chosen.provider !== SCRIPTED_PROVIDER &&
        config.workers?.serves(chosen.provider, chosen.model) === false
      )
        return refuse(
          "MODEL_NOT_CONFIGURED",
          `no live worker serves ${chosen.provider}/${chosen.model} with a key (models.list shows what they serve)`,
          { provider: chosen.provider, model: chosen.model },
        );
      return ok(chosen);
    },
  };
}

export type ModelChoice = ReturnType<typeof createModelChoice>;
