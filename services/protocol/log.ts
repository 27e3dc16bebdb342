// Structured logs: one JSON object per line on stdout. Tests wait for `event` fields (host.ready,
// worker.ready), so event names are part of the operational contract (docs/operations.md).

export interface Logger {
  info(event: string, fields?: Record<string, unknown>): void;
  warn(event: string, fields?: Record<string, unknown>): void;
  error(event: string, fields?: Record<string, unknown>): void;
}

export function createLogger(
  service: string,
  write: (line: string) => void = (l) => process.stdout.write(l),
): Logger {
  const emit = (level: string, event: string, fields?: Record<string, unknown>) => {
    write(`${JSON.stringify({ t: new Date().toISOString(), level, service, event, ...fields })}\n`);
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
