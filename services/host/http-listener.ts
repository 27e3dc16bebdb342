// The host's HTTP listener (PI_HTTP_LISTEN; docs/operations.md, "Health and metrics"): /healthz,
// /readyz and /metrics, read-only, nothing else. It answers no bus request and changes no row.
import http from "node:http";
import type { AddressInfo } from "node:net";

/** `host:port` (IPv6 in brackets: `[::1]:9464`), checked at start; a bad one refuses to start. */
export function parseListenAddress(value: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]\s]+)):(\d{1,5})$/.exec(value.trim());
  const port = m ? Number(m[3]) : Number.NaN;
  if (!m || !(port >= 0 && port <= 65535))
    throw new Error(`PI_HTTP_LISTEN must be host:port or off (got ${JSON.stringify(value)})`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/** The address as written in PI_HTTP_LISTEN and in the hosts row (`host:port`, IPv6 in brackets). */
export function formatListenAddress(a: { host: string; port: number }): string {
  return a.host.includes(":") ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

/** The routes the listener serves (what compose and the Kubernetes probes and scrapes point at). */
export const HTTP_ROUTES = { health: "/healthz", ready: "/readyz", metrics: "/metrics" } as const;

/** Why the host is not ready: each failing condition by name, none when it is. */
export interface Readiness {
  /** A `SELECT 1` that answers within its bound (the caller bounds it). */
  database: () => Promise<boolean>;
  nats: () => boolean;
  /** The startup fence ran and the host serves (host.ready). */
  serving: () => boolean;
  draining: () => boolean;
  /** A tool sandbox starts on this host (tools/sandbox-probe.ts: probed once at start, never per request). */
  sandbox: () => boolean;
}

/** How long /readyz waits for the database before it says it is not ready. */
export const READY_DB_TIMEOUT_MS = 1_000;

/** Resolves false if `check` does not resolve true within `ms` (a hung pool is not ready). */
export function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(false), ms);
    check().then(
      (ok) => {
        clearTimeout(timer);
        resolve(ok);
      },
      () => {
        clearTimeout(timer);
        resolve(false);
      },
    );
  });
}

export async function notReady(r: Readiness): Promise<string[]> {
  const failing: string[] = [];
  if (!r.serving()) failing.push("starting");
  if (r.draining()) failing.push("draining");
  if (!r.nats()) failing.push("nats");
  if (!(await within(READY_DB_TIMEOUT_MS, r.database))) failing.push("database");
  if (!r.sandbox()) failing.push("sandbox");
  return failing;
}

export interface HttpListener {
  /** The bound address (the port is the real one when 0 was asked for). */
  address: { host: string; port: number };
  close(): Promise<void>;
}

export async function startHttpListener(deps: {
  listen: { host: string; port: number };
  readiness: Readiness;
  scrape: () => Promise<{ contentType: string; body: string }>;
  onError: (err: unknown) => void;
}): Promise<HttpListener> {
  const send = (res: http.ServerResponse, status: number, type: string, body: string) => {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    const route = (req.url ?? "").split("?")[0];
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(res, 405, "text/plain; charset=utf-8", "method not allowed\n");
      return;
    }
    const work = async () => {
      if (route === HTTP_ROUTES.health) return send(res, 200, "text/plain; charset=utf-8", "ok\n");
      if (route === HTTP_ROUTES.ready) {
        const failing = await notReady(deps.readiness);
        return send(
          res,
          failing.length === 0 ? 200 : 503,
          "application/json",
          JSON.stringify(failing.length === 0 ? { ready: true } : { ready: false, notReady: failing }),
        );
      }
      if (route === HTTP_ROUTES.metrics) {
        const m = await deps.scrape();
        return send(res, 200, m.contentType, m.body);
      }
      send(res, 404, "text/plain; charset=utf-8", "not found\n");
    };
    work().catch((err) => {
      deps.onError(err);
      if (!res.headersSent) send(res, 500, "text/plain; charset=utf-8", "error\n");
      else res.end();
    });
  });
  // Idle keep-alive connections must not hold the host's exit.
  server.keepAliveTimeout = 2_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(deps.listen.port, deps.listen.host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  server.on("error", deps.onError);
  const bound = server.address() as AddressInfo;
  return {
    address: { host: deps.listen.host, port: bound.port },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
