// Structured logs through pino: one JSON object per line on stdout. Tests wait for `event` fields (host.ready,
// worker.ready), so event names are part of the operational contract (docs/operations.md). A line
// written while a request is handled carries that request's id (`requestId`, docs/protocol.md).
// No line carries a secret: credential shapes and the process's configured secrets are redacted.
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { pino } from "pino";
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

type Redactor = (key: string, value: unknown) => unknown;

/** `value` with every string at any depth passed through `redact` under its key (as JSON.stringify's replacer). */
function redactDeep(key: string, value: unknown, redact: Redactor, depth = 0): unknown {
  const v = redact(key, value);
  if (typeof v !== "object" || v === null || depth > 32) return v;
  if (Array.isArray(v)) return v.map((item, i) => redactDeep(String(i), item, redact, depth + 1));
  if (Object.getPrototypeOf(v) !== Object.prototype) return v;
  const out: Record<string, unknown> = {};
  for (const [k, item] of Object.entries(v)) out[k] = redactDeep(k, item, redact, depth + 1);
  return out;
}

/**
 * A pino logger writing one JSON line per call: `level` (its label), `t` (ISO time), `service`,
 * `event`, the request's id when one is being handled (`requestId`), then the fields. Every string
 * in a line (at any depth) goes through secret-redaction.ts: credential shapes always,
 * `opts.secrets` too; the line's shape is unchanged. Lines go to process.stdout (synchronous for
 * pipes and files on Linux), so a line logged just before the process exits is not lost.
 */
export function createLogger(
  service: string,
  write?: (line: string) => void,
  opts: LoggerOptions = {},
): Logger {
  const secrets = (opts.secrets ?? []).filter((s): s is string => typeof s === "string");
  const redact: Redactor = (key, value) =>
    typeof value === "string" ? redactNamedValue(key, value, secrets) : value;
  // process.stdout itself: its writes to a pipe or file are synchronous on Linux, as pino's own
  // synchronous destination would be, without a second writer on fd 1 beside process.stdout.
  const destination = { write: write ?? ((line: string) => void process.stdout.write(line)) };
  const logger = pino(
    {
      base: { service },
      timestamp: () => `,"t":"${new Date().toISOString()}"`,
      formatters: {
        level: (label) => ({ level: label }),
        log: (object) => redactDeep("", object, redact) as Record<string, unknown>,
      },
      mixin: () => {
        const requestId = currentRequestId();
        return requestId === undefined ? {} : { requestId };
      },
      // The event name first, then the request's id, then the fields.
      mixinMergeStrategy: (fields, context) => ({
        event: (fields as { event?: unknown }).event,
        ...context,
        ...fields,
      }),
    },
    destination,
  );
  return {
    info: (event, fields) => logger.info({ event, ...fields }),
    warn: (event, fields) => logger.warn({ event, ...fields }),
    error: (event, fields) => logger.error({ event, ...fields }),
  };
}

/** How many causes deep an error's fields follow `cause`. */
const CAUSE_DEPTH = 3;

/**
 * The fields of a logged error: its message (`error`) and stack, an AppError's stable `code` and
 * `details`, and its `cause`'s own fields (a few levels deep).
 */
export function errorFields(err: unknown, depth = 0): Record<string, unknown> {
  if (!(err instanceof Error)) return { error: String(err) };
  const fields: Record<string, unknown> = { error: err.message, stack: err.stack };
  const { code, details } = err as { code?: unknown; details?: unknown };
  if (typeof code === "string") fields.code = code;
  if (details !== undefined) fields.details = details;
  if (err.cause !== undefined && depth < CAUSE_DEPTH) fields.cause = errorFields(err.cause, depth + 1);
  return fields;
}
