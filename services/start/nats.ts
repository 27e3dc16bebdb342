// NATS for `npm start`: NATS_URL, else the local server on the probe URL, else a nats-server spawned on
// a free loopback port with JetStream stored under the data folder.
import { type ChildProcess, spawn } from "node:child_process";
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { connect } from "@nats-io/transport-node";
import type { Logger } from "../protocol/log.ts";
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
 * with JetStream stored in `<dataDir>/nats`. Throws with install instructions when there is none.
 * `searchPath` overrides PATH when looking for nats-server (tests).
 */
export async function resolveNats(opts: {
  natsUrl?: string;
  probeUrl: string;
  dataDir: string;
  log: Logger;
  searchPath?: string;
}): Promise<ResolvedService> {
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
  return spawnNats(bin, path.join(path.resolve(opts.dataDir), "nats"), log);
}

async function spawnNats(bin: string, storeDir: string, log: Logger): Promise<ResolvedService> {
  await fs.mkdir(storeDir, { recursive: true });
  const port = await freeLoopbackPort();
  const url = `nats://127.0.0.1:${port}`;
  const output = tail();
  const child: ChildProcess = spawn(bin, ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", storeDir], {
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
  log.info("infra.nats", { source: "spawned", url, storeDir, pid: child.pid });
  return { url, source: "spawned", stop };
}
