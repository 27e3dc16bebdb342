// The worker's model catalogue: pi-ai's built-in providers, with the providers of a pi-style
// models.json (PI_MODELS_JSON, docs/models.md) laid over them. Endpoints, headers and keys come only
// from here and the worker's environment; a client names a provider and a model, nothing else.
import { readFileSync } from "node:fs";
import {
  type Api,
  findEnvKeys,
  getEnvApiKey,
  getModel,
  getModels,
  getProviders,
  type KnownApi,
  type KnownProvider,
  type Model,
} from "@mariozechner/pi-ai";
import { type Fail, isMapping, list, mapping, show, token } from "../runtime/config-fields.ts";
import { SCRIPTED_PROVIDER } from "./scripted-provider.ts";

/** The wire APIs pi-ai 0.73 implements (its `KnownApi`); `api` in the file must be one of them. */
export const MODEL_APIS = [
  "openai-completions",
  "openai-responses",
  "azure-openai-responses",
  "openai-codex-responses",
  "anthropic-messages",
  "mistral-conversations",
  "bedrock-converse-stream",
  "google-generative-ai",
  "google-vertex",
] as const satisfies readonly KnownApi[];

/** pi's defaults for a model entry that leaves a field out (pi's docs/models.md). */
export const MODEL_DEFAULTS = { contextWindow: 128_000, maxTokens: 16_384 } as const;
const MAX_MODEL_ID = 128; // ModelConfig.model's bound: a longer id could never be chosen.
const PROVIDER_KEYS = ["baseUrl", "api", "apiKey", "headers", "models"] as const;
const MODEL_KEYS = ["id", "name", "api", "contextWindow", "maxTokens", "reasoning", "input", "cost"] as const;
const COST_KEYS = ["input", "output", "cacheRead", "cacheWrite"] as const;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type ModelLookup =
  | { ok: true; model: Model<Api>; apiKey: string | undefined }
  | { ok: false; reason: "unknown-provider" | "unknown-model"; error: string };

export interface ModelRegistry {
  /** The models.json it read; undefined = pi-ai's built-ins only. */
  source: string | undefined;
  /** Providers defined by the file (each replaces a built-in of the same name). */
  fileProviders: readonly string[];
  /** What a worker should log at start (never a key): e.g. an apiKey naming an unset variable. */
  warnings: readonly string[];
  lookup(provider: string, modelId: string): ModelLookup;
  /**
   * What this worker announces it serves (docs/protocol.md "Models"): every provider of the file,
   * and the built-in providers whose key is configured, each with its model ids.
   */
  served(): ServedProvider[];
  /**
   * Every key and header value this worker may send to a provider (the file's, and the built-in
   * providers' from the environment): removed from all provider text and log lines that leave the
   * worker (docs/models.md "What never leaves the worker").
   */
  secrets(): string[];
}

export interface ServedProvider {
  provider: string;
  models: string[];
  keyConfigured: boolean;
}

/** The built-in providers with a key in this worker's environment. */
function servedBuiltIns(except: ReadonlySet<string>): ServedProvider[] {
  return [...knownProviders]
    .filter((p) => !except.has(p) && getEnvApiKey(p))
    .map((p) => ({
      provider: p,
      models: getModels(p as KnownProvider).map((m) => m.id),
      keyConfigured: true,
    }));
}

interface FileProvider {
  models: ReadonlyMap<string, Model<Api>>;
  apiKey: string | undefined;
  /** Its header values, all of them taken for secrets (a header may carry a gateway's credential). */
  headerValues: string[];
}

/** Credentials pi-ai's built-in providers read from the environment besides getEnvApiKey's (Bedrock's AWS SDK). */
const CLOUD_CREDENTIAL_VARS = ["AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"];
/** The built-in providers' keys in this worker's environment: every variable pi-ai reads for one. */
function builtInSecrets(): string[] {
  const names = [...knownProviders].flatMap((p) => findEnvKeys(p) ?? []).concat(CLOUD_CREDENTIAL_VARS);
  return [...new Set(names.map((name) => process.env[name]))].filter((v): v is string => !!v);
}

const knownProviders = new Set<string>(getProviders());

function listIds(ids: Iterable<string>): string {
  const all = [...ids];
  const shown = all.slice(0, 20).join(", ");
  return all.length > 20 ? `${shown}, ... (${all.length} in all)` : shown;
}

function builtInLookup(provider: string, modelId: string): ModelLookup {
  if (!knownProviders.has(provider)) {
    return { ok: false, reason: "unknown-provider", error: `provider "${provider}" is not configured` };
  }
  const model = getModel(provider as KnownProvider, modelId as never) as Model<Api> | undefined;
  if (!model) {
    const ids = getModels(provider as KnownProvider).map((m) => m.id);
    return {
      ok: false,
      reason: "unknown-model",
      error: `model "${modelId}" is not one of provider ${provider}'s (${listIds(ids)})`,
    };
  }
  return { ok: true, model, apiKey: getEnvApiKey(provider) };
}

/** pi-ai's built-in providers alone (PI_MODELS_JSON unset); keys from their usual variables. */
export function builtInModels(): ModelRegistry {
  return {
    source: undefined,
    fileProviders: [],
    warnings: [],
    lookup: builtInLookup,
    served: () => servedBuiltIns(new Set()),
    secrets: builtInSecrets,
  };
}

/**
 * A key or header value as pi writes it: the value of the environment variable it names when that
 * is set, else the text itself. pi's command form (`!cmd`) is refused: a worker runs no shell
 * command found in a configuration file.
 */
function secretValue(fail: Fail, at: string, v: unknown, env: NodeJS.ProcessEnv, warnings: string[]): string {
  if (typeof v !== "string" || v.length === 0) fail(at, `expected a non-empty string, got ${show(v)}`);
  if (v.startsWith("!")) {
    fail(
      at,
      "pi's command form (!command) is not supported: put the value in an environment variable of the worker and name that variable",
    );
  }
  const fromEnv = ENV_NAME.test(v) ? env[v] : undefined;
  if (fromEnv) return fromEnv;
  if (/[\r\n]/.test(v)) fail(at, "a value may not contain a line break");
  // An all-caps name is almost surely a variable the operator forgot to set: say so, never the value.
  if (/^[A-Z][A-Z0-9_]*$/.test(v) && v.includes("_"))
    warnings.push(`${at} names ${v}, which is not set: the text itself is used as the value`);
  return v;
}

function positiveInt(fail: Fail, at: string, v: unknown, fallback: number): number {
  if (v === undefined) return fallback;
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v <= 0)
    fail(at, `expected a positive integer, got ${show(v)}`);
  return v;
}

function apiOf(fail: Fail, at: string, v: unknown): Api {
  if (typeof v !== "string" || !(MODEL_APIS as readonly string[]).includes(v))
    fail(at, `${show(v)} is not an api pi-ai knows (${MODEL_APIS.join(", ")})`);
  return v;
}

function baseUrlOf(fail: Fail, at: string, v: unknown): string {
  if (typeof v !== "string") fail(at, `expected an http(s) URL, got ${show(v)}`);
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    return fail(at, `${show(v)} is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") fail(at, `${show(v)} is not an http(s) URL`);
  if (url.username || url.password) fail(at, "credentials belong in apiKey or headers, not in the URL");
  return v.replace(/\/+$/, "");
}

function costOf(fail: Fail, at: string, v: unknown): Model<Api>["cost"] {
  const cost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 };
  if (v === undefined) return cost;
  const m = mapping(fail, at, v, COST_KEYS);
  for (const k of COST_KEYS) {
    const n = m[k];
    if (n === undefined) continue;
    if (typeof n !== "number" || !Number.isFinite(n) || n < 0)
      fail(`${at}.${k}`, `expected a number >= 0, got ${show(n)}`);
    cost[k] = n;
  }
  return cost;
}

function inputOf(fail: Fail, at: string, v: unknown): Model<Api>["input"] {
  if (v === undefined) return ["text"];
  const items = list(fail, at, v);
  if (items.length === 0) fail(at, 'expected ["text"] or ["text", "image"]');
  for (const [i, x] of items.entries())
    if (x !== "text" && x !== "image") fail(`${at}[${i}]`, `expected "text" or "image", got ${show(x)}`);
  return [...new Set(items as Array<"text" | "image">)];
}

function modelOf(
  fail: Fail,
  at: string,
  v: unknown,
  provider: {
    name: string;
    baseUrl: string;
    api: Api | undefined;
    headers: Record<string, string> | undefined;
  },
): Model<Api> {
  const m = mapping(fail, at, v, MODEL_KEYS);
  const id = m.id;
  if (typeof id !== "string" || id.length === 0 || id.length > MAX_MODEL_ID || /\p{Cc}/u.test(id))
    fail(`${at}.id`, `expected a model id of 1 to ${MAX_MODEL_ID} printable characters, got ${show(id)}`);
  if (m.name !== undefined && (typeof m.name !== "string" || m.name.length === 0))
    fail(`${at}.name`, `expected a non-empty string, got ${show(m.name)}`);
  if (m.reasoning !== undefined && typeof m.reasoning !== "boolean")
    fail(`${at}.reasoning`, `expected true or false, got ${show(m.reasoning)}`);
  const api = m.api === undefined ? provider.api : apiOf(fail, `${at}.api`, m.api);
  if (!api) fail(`${at}.api`, "no api: set it on the provider or on this model");
  return {
    id,
    name: (m.name as string | undefined) ?? id,
    api,
    provider: provider.name,
    baseUrl: provider.baseUrl,
    reasoning: (m.reasoning as boolean | undefined) ?? false,
    input: inputOf(fail, `${at}.input`, m.input),
    cost: costOf(fail, `${at}.cost`, m.cost),
    contextWindow: positiveInt(fail, `${at}.contextWindow`, m.contextWindow, MODEL_DEFAULTS.contextWindow),
    maxTokens: positiveInt(fail, `${at}.maxTokens`, m.maxTokens, MODEL_DEFAULTS.maxTokens),
    ...(provider.headers ? { headers: provider.headers } : {}),
  };
}

function providerOf(
  fail: Fail,
  name: string,
  v: unknown,
  env: NodeJS.ProcessEnv,
  warnings: string[],
): FileProvider {
  const at = `providers.${name}`;
  token(fail, at, name, "provider name");
  if (name === SCRIPTED_PROVIDER) fail(at, `"${SCRIPTED_PROVIDER}" is the built-in test provider's name`);
  const p = mapping(fail, at, v, PROVIDER_KEYS);
  const baseUrl = baseUrlOf(fail, `${at}.baseUrl`, p.baseUrl);
  const api = p.api === undefined ? undefined : apiOf(fail, `${at}.api`, p.api);
  const apiKey =
    p.apiKey === undefined ? undefined : secretValue(fail, `${at}.apiKey`, p.apiKey, env, warnings);
  let headers: Record<string, string> | undefined;
  if (p.headers !== undefined) {
    headers = {};
    for (const [h, hv] of Object.entries(mapping(fail, `${at}.headers`, p.headers, null))) {
      if (!HEADER_NAME.test(h)) fail(`${at}.headers`, `${show(h)} is not an HTTP header name`);
      headers[h] = secretValue(fail, `${at}.headers.${h}`, hv, env, warnings);
    }
  }
  const entries = list(fail, `${at}.models`, p.models);
  if (entries.length === 0) fail(`${at}.models`, "expected at least one model");
  const models = new Map<string, Model<Api>>();
  entries.forEach((entry, i) => {
    const model = modelOf(fail, `${at}.models[${i}]`, entry, { name, baseUrl, api, headers });
    if (models.has(model.id)) fail(`${at}.models[${i}].id`, `${show(model.id)} is listed twice`);
    models.set(model.id, model);
  });
  return { models, apiKey, headerValues: Object.values(headers ?? {}) };
}

/**
 * Validates a parsed models.json and builds the registry. Throws (the worker refuses to start) on
 * the first doubtful key, naming its path: unknown keys, names that are not subject tokens, a
 * baseUrl that is not http(s), an api pi-ai does not implement, pi's `!command` values.
 */
export function parseModelsConfig(raw: unknown, env: NodeJS.ProcessEnv, source: string): ModelRegistry {
  const fail: Fail = (at, message) => {
    throw new Error(`PI_MODELS_JSON (${source}): ${at ? `${at}: ` : ""}${message}`);
  };
  const top = mapping(fail, "", raw, ["providers"]);
  if (!isMapping(top.providers))
    fail("providers", `expected a mapping of providers, got ${show(top.providers)}`);
  const warnings: string[] = [];
  const providers = new Map<string, FileProvider>();
  for (const [name, value] of Object.entries(top.providers))
    providers.set(name, providerOf(fail, name, value, env, warnings));
  return {
    source,
    fileProviders: [...providers.keys()],
    warnings,
    served: () => [
      ...[...providers].map(([provider, p]) => ({
        provider,
        models: [...p.models.keys()],
        keyConfigured: p.apiKey !== undefined,
      })),
      ...servedBuiltIns(new Set(providers.keys())),
    ],
    secrets: () => [
      ...new Set([
        ...[...providers.values()].flatMap((p) => [...(p.apiKey ? [p.apiKey] : []), ...p.headerValues]),
        ...builtInSecrets(),
      ]),
    ],
    lookup(provider, modelId) {
      const p = providers.get(provider);
      if (!p) return builtInLookup(provider, modelId);
      const model = p.models.get(modelId);
      if (!model) {
        return {
          ok: false,
          reason: "unknown-model",
          error: `model "${modelId}" is not one of provider ${provider}'s (${listIds(p.models.keys())})`,
        };
      }
      return { ok: true, model, apiKey: p.apiKey };
    },
  };
}

/** Reads PI_MODELS_JSON's file; unset means the built-ins only. Throws on an unreadable or bad file. */
export function loadModelsConfig(file: string | undefined, env: NodeJS.ProcessEnv): ModelRegistry {
  if (!file) return builtInModels();
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    throw new Error(`PI_MODELS_JSON (${file}) cannot be read`, { cause: err });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`PI_MODELS_JSON (${file}) is not JSON`, { cause: err });
  }
  return parseModelsConfig(raw, env, file);
}
