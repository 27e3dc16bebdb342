// The one error type that crosses process boundaries: a stable code, a message and details (the
// wire form of a refusal). An expected refusal is a Refusal value in a Result (result.ts), turned
// into an AppError only where it crosses the wire; code not yet moved to values still throws one
// (the files biome.json names for lint/refusals-are-values.grit). Only bugs are other exceptions
// (sent as INTERNAL).
import { type ErrorCode, errorCodeInfo, isErrorCode } from "./error-codes.ts";

export interface WireError {
  code: ErrorCode;
  message: string;
  retriable: boolean;
  details?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: ErrorCode,
    message?: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(
      message ?? errorCodeInfo[code].message,
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = "AppError";
    this.code = code;
    this.details = options?.details;
  }

  get retriable(): boolean {
    return errorCodeInfo[this.code].retriable;
  }

  toWire(): WireError {
    const wire: WireError = { code: this.code, message: this.message, retriable: this.retriable };
    if (this.details !== undefined) wire.details = this.details;
    return wire;
  }

  static fromWire(value: unknown): AppError {
    if (typeof value === "object" && value !== null) {
      const v = value as Record<string, unknown>;
      if (isErrorCode(v.code)) {
        const details =
          typeof v.details === "object" && v.details !== null
            ? (v.details as Record<string, unknown>)
            : undefined;
        return new AppError(v.code, typeof v.message === "string" ? v.message : undefined, { details });
      }
    }
    return new AppError("INTERNAL", "malformed error reply");
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}
