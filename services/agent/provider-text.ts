// What of a provider's words leaves the worker (docs/models.md "What never leaves the worker"): the
// text of a failed call, in turn.end's `error` and in the failed message's `errorMessage` and
// `diagnostics`, loses every configured key and header value and every credential shape
// (runtime/secret-redaction.ts). The model's own content is its work and is sent as it is.
import { redactSecrets } from "../runtime/secret-redaction.ts";

export type Redact = (text: string) => string;

/** The redaction of one worker: its configured secrets (ModelRegistry.secrets) and the shapes. */
export function providerTextRedactor(secrets: readonly string[]): Redact {
  const list = [...secrets];
  return (text) => redactSecrets(text, list);
}

/**
 * `message` as it may leave the worker: every string of an assistant message outside `content`
 * (the failure text, pi-ai's diagnostics with their stacks, response ids) redacted at any depth;
 * `content` and messages of other roles unchanged. The original is not modified.
 */
export function withoutProviderSecrets<T extends { role: string }>(message: T, redact: Redact): T {
  if (message.role !== "assistant") return message;
  const { content, ...rest } = message as T & { content?: unknown };
  const redacted = JSON.parse(
    JSON.stringify(rest, (_key, value: unknown) => (typeof value === "string" ? redact(value) : value)),
  ) as Record<string, unknown>;
  return { ...redacted, ...(content === undefined ? {} : { content }) } as unknown as T;
}
