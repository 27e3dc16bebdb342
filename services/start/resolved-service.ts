// What the launcher's service resolution shares: the resolved service, URL redaction for logs, a free
// loopback port, the bounded output tail of a child process and the way a started server is stopped.
import type { ChildProcess } from "node:child_process";
import net from "node:net";

export interface ResolvedService {
  url: string;
  source: "env" | "probe" | "embedded" | "spawned";
  /** Stops what this module started (embedded Postgres, spawned nats-server); a no-op otherwise. */
  stop(): Promise<void>;
}

/** How long a probe of a configured or local server may take. */
export const PROBE_TIMEOUT_MS = 1_000;
/** How long a started server may take to accept connections. */
export const READY_TIMEOUT_MS = 60_000;

/** The URL without its password, for logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "";
    return u.toString();
  } catch {
    return "<unparseable url>";
  }
}

export const noop = async () => {};

/** A TCP port on 127.0.0.1 that nothing listens on right now. */
export async function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Keeps the last lines of a child's output for error messages. */
export function tail(max = 40) {
  const lines: string[] = [];
  return {
    push(chunk: string) {
      for (const line of chunk.split("\n")) {
        if (!line.trim()) continue;
        lines.push(line);
        if (lines.length > max) lines.shift();
      }
    },
    text: () => lines.join("\n"),
  };
}

/**
 * Watches a server the launcher started: its output goes to `output`, it is signalled if this process
 * exits, and `stop()` sends `signal`, then SIGKILL after killAfterMs, and resolves once it is gone.
 */
export function superviseChild(
  child: ChildProcess,
  output: ReturnType<typeof tail>,
  opts: { signal: NodeJS.Signals; killAfterMs: number },
): () => Promise<void> {
  child.stdout?.setEncoding("utf8").on("data", output.push);
  child.stderr?.setEncoding("utf8").on("data", output.push);
  child.once("error", (err) => output.push(String(err)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killOnExit = () => child.kill(opts.signal);
  process.on("exit", killOnExit);
  return async () => {
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill(opts.signal);
      const timer = setTimeout(() => child.kill("SIGKILL"), opts.killAfterMs);
      await exited;
      clearTimeout(timer);
    }
  };
}
