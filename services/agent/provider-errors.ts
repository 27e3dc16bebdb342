// Names why a model call failed, from the text pi-ai leaves in a failed assistant message's
// `errorMessage` (the SDK's "<status> <provider message>", or its connection-error text). Only the
// classification lives here; the error-code registry and turn.end carry the codes.
import { getOverflowPatterns } from "@mariozechner/pi-ai";

export const PROVIDER_FAILURE_CODES = [
  "PROVIDER_UNAUTHORIZED",
  "PROVIDER_RATE_LIMITED",
  "PROVIDER_UNREACHABLE",
  "CONTEXT_TOO_LARGE",
  "PROVIDER_ERROR",
] as const;
export type ProviderFailureCode = (typeof PROVIDER_FAILURE_CODES)[number];

/** The SDKs (openai, @anthropic-ai/sdk) start an HTTP failure with its status. */
const STATUS = /^(\d{3})(?:\s|$)/;
/** No HTTP answer at all: refused, reset, DNS, or the SDK's own timeout. */
const UNREACHABLE = [
  /^Connection error\.?$/i,
  /^Request timed out\.?$/i,
  /\b(?:ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT)\b/,
  /\bfetch failed\b/i,
  /\bsocket hang up\b/i,
];
const RATE_LIMIT = [/\brate[ _-]?limit/i, /\btoo many requests\b/i, /\bthrottl/i];
/** pi-ai's own refusal before any request when it has no key for the provider. */
const NO_KEY = /^No API key for provider\b/i;
/**
 * pi-ai's overflow patterns, minus its "400/413 (no body)" one (Cerebras): from another server a
 * bare 400 says nothing about the context, and a guessed code would mislead.
 */
const OVERFLOW = getOverflowPatterns().filter((p) => !p.source.includes("no body"));

/**
 * Maps a provider failure text to a code. A context overflow is recognised by pi-ai's own patterns
 * (whatever the status); anything not recognised is PROVIDER_ERROR, never a guess at a finer code.
 */
export function classifyProviderFailure(message: string): ProviderFailureCode {
  const text = message.trim();
  const status = Number(STATUS.exec(text)?.[1] ?? Number.NaN);
  if (status === 401 || status === 403 || NO_KEY.test(text)) return "PROVIDER_UNAUTHORIZED";
  // A 429 or rate-limit text first: pi-ai excludes these from overflow too ("too many tokens" throttles).
  if (status === 429 || RATE_LIMIT.some((p) => p.test(text))) return "PROVIDER_RATE_LIMITED";
  if (OVERFLOW.some((p) => p.test(text))) return "CONTEXT_TOO_LARGE";
  if (Number.isNaN(status) && UNREACHABLE.some((p) => p.test(text))) return "PROVIDER_UNREACHABLE";
  return "PROVIDER_ERROR";
}
