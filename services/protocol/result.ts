// The one shape of an expected refusal, from the store up to the bus: a Refusal value inside a Result.
// Only bugs throw; the bus turns a refusal into a wire error reply in one place (docs/architecture.md
// "Refusals"), as an AppError (app-error.ts), the refusal's wire form.
import { AppError } from "./app-error.ts";
import type { ErrorCode } from "./error-codes.ts";
import type { ToolExecuteResult } from "./schemas.ts";

export interface Refusal {
  code: ErrorCode;
  message?: string;
  details?: Record<string, unknown>;
}

export type Result<T> = { ok: true; value: T } | { ok: false; refusal: Refusal };

export function ok<T>(value: T): Result<T> {
  return { ok: true, value };
}

export function refuse(code: ErrorCode, message?: string, details?: Record<string, unknown>): Result<never> {
  return {
    ok: false,
    refusal: { code, ...(message !== undefined ? { message } : {}), ...(details ? { details } : {}) },
  };
}

/** The refusal as the AppError the bus replies with (for code that still propagates by throwing). */
export function refusalError(refusal: Refusal): AppError {
  return new AppError(refusal.code, refusal.message, refusal.details ? { details: refusal.details } : {});
}

/** The value of an ok result; a refusal is thrown as its AppError (the bus's one reply path catches it). */
export function unwrap<T>(result: Result<T>): T {
  if (result.ok) return result.value;
  throw refusalError(result.refusal);
}

/**
 * A tool call's result as the model sees it: `code` null is a success; a code makes it an error whose
 * text starts with the code (the one shape of a tool refusal, built here for every tool).
 */
export function toolResult(
  code: ErrorCode | null,
  text: string,
  details?: Record<string, unknown>,
): ToolExecuteResult {
  return {
    content: [{ type: "text", text: code ? `${code}: ${text}` : text }],
    isError: code !== null,
    ...(code ? { code } : {}),
    ...(details ? { details } : {}),
  };
}
