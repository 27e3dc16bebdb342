// NATS for `npm start`: NATS_URL, else the local server on the probe URL, else a nats-server spawned on
// a free loopback port with JetStream stored under the data folder and, for the web console, a
// WebSocket listener on loopback that only the console's origins may open.
import { type ChildProcess, spawn } from "node:child_process";
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { connect } from "@nats-io/transport-node";
import type { Logger } from "../runtime/log.ts";
import {
  freeLoopbackPort,
  noop,
  PROBE_TIMEOUT_MS,
  READY_TIMEOUT_MS,
  type ResolvedService,
  redactUrl,
  superviseChild,
  tail,
} from "./resolved-service.ts";

/** A resolved NATS; `wsUrl` only for a spawned server given console origins (its own WebSocket). */
export interface ResolvedNats extends ResolvedService {
  wsUrl?: string;
}

/** nats-server on a search path (PATH by default), or null. */
export async function findNatsServer(searchPath = process.env.PATH ?? ""): Promise<string | null> {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, "nats-server");
    try {
      await fs.access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

async function natsReachable(url: string): Promise<void> {
  const nc = await connect({ servers: url, reconnect: false, timeout: PROBE_TIMEOUT_MS });
  await nc.close();
}

export const NATS_INSTALL_HINT =
  "install nats-server (Debian/Ubuntu: `apt-get install nats-server`; elsewhere see " +
  "https://docs.nats.io/running-a-nats-service/introduction/installation) or set NATS_URL to a running server";

/**
 * NATS_URL as given; else the server at probeUrl; else a nats-server spawned on a free loopback port
 * with JetStream stored in `<dataDir>/nats`, configured by `<dataDir>/nats.conf`. Given `webOrigins`,
 * the spawned server also gets a WebSocket listener on 127.0.0.1 that accepts only those origins
 * (never without them: nats-server lets any origin in when the list is empty). Throws with install
 * instructions when there is none. `searchPath` overrides PATH when looking for nats-server (tests).
 */
export async function resolveNats(opts: {
  natsUrl?: string;
  probeUrl: string;
  dataDir: string;
  log: Logger;
  webOrigins?: string[];
  searchPath?: string;
}): Promise<ResolvedNats> {
  const { log } = opts;
  if (opts.natsUrl) {
    log.info("infra.nats", { source: "env", url: redactUrl(opts.natsUrl) });
    return { url: opts.natsUrl, source: "env", stop: noop };
  }
  try {
    await natsReachable(opts.probeUrl);
    log.info("infra.nats", { source: "probe", url: redactUrl(opts.probeUrl) });
    return { url: opts.probeUrl, source: "probe", stop: noop };
  } catch (err) {
    log.info("infra.nats_probe", {
      probeUrl: redactUrl(opts.probeUrl),
      usable: false,
      reason: (err as Error).message,
    });
  }
  const bin = await findNatsServer(opts.searchPath);
  if (!bin) {
    throw new Error(
      `No NATS server answers at ${redactUrl(opts.probeUrl)} and nats-server is not on PATH: ${NATS_INSTALL_HINT}`,
    );
  }
  return spawnNats(bin, path.resolve(opts.dataDir), opts.webOrigins ?? [], log);
}

/**
 * The configuration of a spawned nats-server: client port and WebSocket on 127.0.0.1 only, JetStream
 * in storeDir, and the WebSocket block only with at least one allowed origin.
 */
export function spawnedNatsConfig(opts: {
  port: number;
  storeDir: string;
  ws?: { port: number; allowedOrigins: string[] };
}): string {
  const lines = [
    "# Written by `npm start` (services/start/nats.ts) at every start; edits are overwritten.",
    `listen: "127.0.0.1:${opts.port}"`,
    `jetstream { store_dir: ${JSON.stringify(opts.storeDir)} }`,
  ];
  if (opts.ws && opts.ws.allowedOrigins.length > 0) {
    lines.push(
      "websocket {",
      // Loopback only, ever: no TLS, so nothing beyond this machine may reach it.
      `  listen: "127.0.0.1:${opts.ws.port}"`,
      "  no_tls: true",
      `  allowed_origins: [${opts.ws.allowedOrigins.map((o) => JSON.stringify(o)).join(", ")}]`,
      "}",
    );
  }
  return `${lines.join("\n")}\n`;
}

async function spawnNats(
  bin: string,
  dataDir: string,
  webOrigins: string[],
  log: Logger,
): Promise<ResolvedNats> {
  const storeDir = path.join(dataDir, "nats");
  await fs.mkdir(storeDir, { recursive: true });
  // None of its ports may be one the console's origins name (chosen first, bound only later).
  const taken = new Set(webOrigins.map((o) => Number(new URL(o).port)).filter((p) => p > 0));
  const freeUntaken = async (): Promise<number> => {
    for (;;) {
      const p = await freeLoopbackPort();
      if (!taken.has(p)) {
        taken.add(p);
        return p;
      }
    }
  };
  const port = await freeUntaken();
  const url = `nats://127.0.0.1:${port}`;
  const wsPort = webOrigins.length > 0 ? await freeUntaken() : undefined;
  const wsUrl = wsPort === undefined ? undefined : `ws://127.0.0.1:${wsPort}`;
  const configFile = path.join(dataDir, "nats.conf");
  const ws = wsPort === undefined ? undefined : { port: wsPort, allowedOrigins: webOrigins };
  await fs.writeFile(configFile, spawnedNatsConfig({ port, storeDir, ws }), { mode: 0o600 });
  const output = tail();
  const child: ChildProcess = spawn(bin, ["-c", configFile], {
    detached: true, // own process group, like embedded Postgres: stopped last, by us
    stdio: ["ignore", "pipe", "pipe"],
  });
  const stopChild = superviseChild(child, output, { signal: "SIGTERM", killAfterMs: 10_000 });
  const stop = async () => {
    await stopChild();
    log.info("infra.nats_stopped", { url });
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      await stop();
      throw new Error(`nats-server exited during start: ${output.text()}`);
    }
    try {
      await natsReachable(url);
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(
          `nats-server did not accept connections within ${READY_TIMEOUT_MS} ms: ${output.text()}`,
          {
            cause: err,
          },
        );
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  log.info("infra.nats", {
    source: "spawned",
    url,
    storeDir,
    configFile,
    pid: child.pid,
    ...(wsUrl ? { wsUrl, allowedOrigins: webOrigins } : {}),
  });
  return wsUrl ? { url, source: "spawned", stop, wsUrl } : { url, source: "spawned", stop };
}
