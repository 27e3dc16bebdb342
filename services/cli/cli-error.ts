// CLI-local failures that never travel on the bus: a usage error (exit 2) and a local condition
// such as a follow timeout (exit 1). Wire errors stay AppError values from services/protocol.

/** A command line the CLI refuses before sending anything; printed as `error USAGE: ...`, exit 2. */
export class UsageError extends Error {
  readonly code = "USAGE";
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

/**
 * A condition only the CLI sees (no reply, no end of turn in time, NATS unreachable). Its code is
 * local to the CLI's stderr and is not one of the protocol's error codes.
 */
export class CliError extends Error {
  readonly code: "TIMEOUT" | "NATS_UNAVAILABLE";
  constructor(code: "TIMEOUT" | "NATS_UNAVAILABLE", message: string, options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "CliError";
    this.code = code;
  }
}
