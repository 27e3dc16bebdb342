// NATS for tests: the shared server of NATS_URL (or the local default) with a unique subject prefix
// and stream name per file, or a private nats-server on a free port for tests that kill NATS.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { connect, type NatsConnection } from "@nats-io/transport-node";
import { freeLoopbackPort } from "../../services/start/infra.ts";

export const NATS_URL = process.env.NATS_URL || "nats://127.0.0.1:4222";

export function uniquePrefix(label: string): string {
  return `t${label.replace(/[^a-z0-9]/gi, "").slice(0, 12)}${randomBytes(4).toString("hex")}`;
}

export function connectNats(url = NATS_URL): Promise<NatsConnection> {
  return connect({ servers: url, name: "pihost-test" });
}

export const freePort = freeLoopbackPort;

export interface PrivateNats {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/** Starts a private nats-server (JetStream on) on a free loopback port. */
export async function startPrivateNats(): Promise<PrivateNats> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-nats-"));
  const child: ChildProcess = spawn(
    "nats-server",
    ["-a", "127.0.0.1", "-p", String(port), "-js", "-sd", dir],
    {
      stdio: "ignore",
    },
  );
  const url = `nats://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const nc = await connect({ servers: url, reconnect: false });
      await nc.close();
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url,
    port,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once("exit", r));
        child.kill("SIGKILL");
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
