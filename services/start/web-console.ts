// The web console in development: which port it gets, which origins its NATS WebSocket must allow,
// which WebSocket URL it talks to (or why it is off), and Vite's dev server for services/web, loaded
// by path (service folders share no code) and stopped with `npm start`.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { stripVTControlCharacters } from "node:util";
import type { Logger } from "../runtime/log.ts";
import type { ResolvedNats } from "./nats.ts";
import { freeLoopbackPort, redactUrl } from "./resolved-service.ts";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
/** The console's Vite configuration (services/web owns it; only its path is known here). */
export const WEB_CONFIG_FILE = path.join(REPO_ROOT, "services/web/vite.config.ts");
export const DEFAULT_WEB_PORT = 5173;

/**
 * The console's port: PI_WEB_PORT exactly (an integer 1-65535, else this throws), else 5173 when
 * nothing listens there, else a free loopback port.
 */
export async function chooseWebPort(
  env: NodeJS.ProcessEnv,
  free: (port: number) => Promise<boolean> = loopbackPortFree,
): Promise<number> {
  const given = env.PI_WEB_PORT?.trim();
  if (given) {
    const port = Number(given);
    if (!/^\d+$/.test(given) || port < 1 || port > 65_535) {
      throw new Error(`PI_WEB_PORT must be a TCP port (1-65535), not ${JSON.stringify(env.PI_WEB_PORT)}`);
    }
    return port;
  }
  return (await free(DEFAULT_WEB_PORT)) ? DEFAULT_WEB_PORT : freeLoopbackPort();
}

async function loopbackPortFree(port: number): Promise<boolean> {
  const net = await import("node:net");
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once("error", () => resolve(false));
    srv.listen(port, "127.0.0.1", () => srv.close(() => resolve(true)));
  });
}

/** The origins a browser sends for the console on this port (both loopback spellings). */
export function webOrigins(port: number): string[] {
  return [`http://127.0.0.1:${port}`, `http://localhost:${port}`];
}

/** A WebSocket URL for logs: as given, unless it carries a password. */
function shownUrl(url: string): string {
  return URL.canParse(url) && new URL(url).password ? redactUrl(url) : url;
}

export type ConsoleSocket = { on: true; wsUrl: string; from: "spawned" | "PI_WEB_WS_URL" } | { on: false };

/**
 * The NATS WebSocket URL the console uses: the spawned server's own listener; for a NATS from
 * NATS_URL or the probe, PI_WEB_WS_URL (npm start cannot know that server's WebSocket). Without one
 * the console is off, and this logs the one line (`infra.web_off`) that says why and what to set.
 * A PI_WEB_WS_URL that is not a ws:// or wss:// URL throws.
 */
export function consoleSocket(opts: {
  nats: ResolvedNats;
  envWsUrl: string | undefined;
  webPort: number;
  log: Logger;
}): ConsoleSocket {
  const { nats, log } = opts;
  const envWsUrl = opts.envWsUrl?.trim() || undefined;
  if (envWsUrl !== undefined) {
    let scheme = "";
    try {
      scheme = new URL(envWsUrl).protocol;
    } catch {}
    if (scheme !== "ws:" && scheme !== "wss:") {
      throw new Error(`PI_WEB_WS_URL must be a ws:// or wss:// URL, not ${JSON.stringify(envWsUrl)}`);
    }
  }
  if (nats.source === "spawned" && nats.wsUrl) {
    if (envWsUrl !== undefined) {
      log.warn("infra.web_ws_url_ignored", {
        reason: "npm start spawned its own NATS, whose WebSocket the console uses",
        ignored: shownUrl(envWsUrl),
        wsUrl: nats.wsUrl,
      });
    }
    return { on: true, wsUrl: nats.wsUrl, from: "spawned" };
  }
  if (envWsUrl !== undefined) return { on: true, wsUrl: envWsUrl, from: "PI_WEB_WS_URL" };
  const origins = webOrigins(opts.webPort).join(" and ");
  const where =
    nats.source === "env" ? "NATS_URL" : nats.source === "probe" ? "the probe URL" : "a spawned server";
  log.warn("infra.web_off", {
    console: "off",
    natsSource: nats.source,
    natsUrl: redactUrl(nats.url),
    reason: `NATS comes from ${where} (${redactUrl(nats.url)}) and npm start cannot know its WebSocket URL`,
    fix: `set PI_WEB_WS_URL to that server's WebSocket URL (its websocket block must allow the origins ${origins}), or leave NATS_URL unset with nothing on the probe URL so npm start spawns its own NATS`,
  });
  return { on: false };
}

export interface WebConsole {
  url: string;
  stop(): Promise<void>;
}

/**
 * Vite's dev server for the console on 127.0.0.1:port (strictPort: the NATS origins name this port),
 * with PI_WEB_WS_URL and PI_WEB_PREFIX in the environment its config reads. Vite's own SIGTERM and
 * stdin handlers (they call process.exit) are removed: `npm start` stops it in order.
 * Throws when the configuration is missing or the server cannot listen.
 */
export async function startWebConsole(opts: {
  port: number;
  wsUrl: string;
  prefix: string;
  log: Logger;
  configFile?: string;
}): Promise<WebConsole> {
  const configFile = opts.configFile ?? WEB_CONFIG_FILE;
  if (!existsSync(configFile)) throw new Error(`${configFile} does not exist`);
  const { log } = opts;
  process.env.PI_WEB_WS_URL = opts.wsUrl;
  process.env.PI_WEB_PREFIX = opts.prefix;
  const vite = await import("vite");
  const sigterm = new Set(process.listeners("SIGTERM"));
  const stdinEnd = new Set(process.stdin.listeners("end"));
  const forward =
    (level: "info" | "warn" | "error") =>
    (msg: string): void =>
      log[level]("web.vite", { message: stripVTControlCharacters(msg) });
  const warned = new Set<string>();
  const customLogger = {
    hasWarned: false,
    info: forward("info"),
    warn(msg: string) {
      customLogger.hasWarned = true;
      forward("warn")(msg);
    },
    warnOnce(msg: string) {
      if (warned.has(msg)) return;
      warned.add(msg);
      customLogger.warn(msg);
    },
    error: forward("error"),
    clearScreen() {},
    hasErrorLogged: () => false,
  };
  const server = await vite.createServer({
    configFile,
    customLogger,
    clearScreen: false,
    server: { host: "127.0.0.1", port: opts.port, strictPort: true },
  });
  for (const l of process.listeners("SIGTERM")) if (!sigterm.has(l)) process.off("SIGTERM", l);
  for (const l of process.stdin.listeners("end")) {
    if (!stdinEnd.has(l)) process.stdin.off("end", l as (...args: unknown[]) => void);
  }
  try {
    await server.listen();
  } catch (err) {
    await server.close().catch(() => {});
    throw err;
  }
  const url = `http://127.0.0.1:${opts.port}/`;
  log.info("infra.web", { url, wsUrl: shownUrl(opts.wsUrl), prefix: opts.prefix, configFile });
  return {
    url,
    async stop() {
      await server.close();
      log.info("infra.web_stopped", { url });
    },
  };
}
