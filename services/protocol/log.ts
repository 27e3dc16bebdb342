// Structured logs: one JSON object per line on stdout. Tests wait for `event` fields (host.ready,
// worker.ready), so event names are part of the operational contract (docs/operations.md). A line
// written while a request is handled carries that request's id (`requestId`, docs/protocol.md).
// No line carries a secret: credential shapes and the process's configured secrets are redacted.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { redactNamedValue } from "./secret-redaction.ts";

export interface Logger {
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

const requestContext = new AsyncLocalStorage<{ requestId: string }>();

/** A fresh request id (`req_` and 16 random bytes, base64url). */
export function newRequestId(): string {
  return `rid_${randomBytes(16).toString("base64url")}`;
}

/** Runs `work` (and everything it starts) as the request `requestId`: its log lines carry the id. */
export function withRequestId<T>(requestId: string, work: () => T): T {
  return requestContext.run({ requestId }, work);
}

/** The id of the request being handled here and now, or undefined outside any. */
export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}

export interface LoggerOptions {
  /** The process's configured secrets (a worker's API keys and header values), removed from every line. */
  secrets?: readonly (string | undefined)[];
}

/**
 * A logger writing one JSON line per call. Every string in a line (at any depth) goes through
 * secret-redaction.ts: credential shapes always, `opts.secrets` too; the line's shape is unchanged.
 */
export function createLogger(
  service: string,
  write: (line: string) => void = (l) => process.stdout.write(l),
  opts: LoggerOptions = {},
): Logger {
  const secrets = (opts.secrets ?? []).filter((s): s is string => typeof s === "string");
  const redact = (key: string, value: unknown) =>
    typeof value === "string" ? redactNamedValue(key, value, secrets) : value;
  const emit = (level: string, event: string, fields?: Record<string, unknown>) => {
    const requestId = currentRequestId();
    const context = requestId === undefined ? {} : { requestId };
    const line = { t: new Date().toISOString(), level, service, event, ...context, ...fields };
    write(`${JSON.stringify(line, redact)}\n`);
  };
  return {
    info: (e, f) => emit("info", e, f),
    warn: (e, f) => emit("warn", e, f),
    error: (e, f) => emit("error", e, f),
  };
}

export function errorFields(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { error: err.message, stack: err.stack };
  return { error: String(err) };
}
