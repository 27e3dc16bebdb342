// NATS for tests: the shared server of NATS_URL (or the local default) with a unique subject prefix
// and stream name per file, or a private nats-server on a free port for tests that kill NATS.
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { freeLoopbackPort } from "../../services/start/infra.ts";
import { type Resource, track } from "./leaks.ts";

export const NATS_URL = process.env.NATS_URL || "nats://127.0.0.1:4222";

export function uniquePrefix(label: string): string {
  return `t${label.replace(/[^a-z0-9]/gi, "").slice(0, 12)}${randomBytes(4).toString("hex")}`;
}

const connections = new WeakMap<NatsConnection, Resource>();
const subscriptions = new WeakMap<Subscription, Resource>();

/** The leak-record entry of a connection made by connectNats. */
export function natsResource(nc: NatsConnection): Resource | undefined {
  return connections.get(nc);
}

/** The leak-record entry of a subscription made on a connection from connectNats. */
export function subscriptionResource(sub: Subscription): Resource | undefined {
  return subscriptions.get(sub);
}

/** A connection whose subscriptions (made with nc.subscribe) are recorded for the leak check. */
export async function connectNats(url = NATS_URL): Promise<NatsConnection> {
  const nc = await connect({ servers: url, name: "pihost-test" });
  connections.set(
    nc,
    track({
      kind: "NATS connection",
      name: () => url,
      isOpen: () => !nc.isClosed(),
      close: () => nc.close(),
    }),
  );
  const subscribe = nc.subscribe.bind(nc);
  nc.subscribe = (subject, opts) => {
    const sub = subscribe(subject, opts);
    // An iterator subscription reports isClosed() only once iterated: note the unsubscribe itself.
    let ended = false;
    const unsubscribe = sub.unsubscribe.bind(sub);
    sub.unsubscribe = (max) => {
      if (max === undefined) ended = true;
      unsubscribe(max);
    };
    const drain = sub.drain.bind(sub);
    sub.drain = () => {
      ended = true;
      return drain();
    };
    subscriptions.set(
      sub,
      track({
        kind: "NATS subscription",
        name: () => subject,
        isOpen: () => !ended && !sub.isClosed() && !nc.isClosed(),
        close: async () => sub.unsubscribe(),
      }),
    );
    return sub;
  };
  return nc;
}

export const freePort = freeLoopbackPort;

export interface PrivateNats {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Starts a private nats-server (JetStream on) on a free loopback port; with `auth`, the server
 * requires that user and password (and the readiness probe connects with them). With `configFile`
 * (for example what `pihost nats-config` wrote) the server runs that configuration, `auth` then
 * naming one of its users for the probe; address, port and store folder are still the test's. With
 * `caFile` the probe checks a TLS server against that CA.
 */
export async function startPrivateNats(
  auth?: { user: string; pass: string },
  opts: { configFile?: string; caFile?: string } = {},
): Promise<PrivateNats> {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-nats-"));
  const child: ChildProcess = spawn(
    "nats-server",
    [
      "-a",
      "127.0.0.1",
      "-p",
      String(port),
      "-js",
      "-sd",
      dir,
      ...(opts.configFile ? ["-c", opts.configFile] : auth ? ["--user", auth.user, "--pass", auth.pass] : []),
    ],
    {
      stdio: "ignore",
    },
  );
  const url = `nats://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGKILL");
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  track({
    kind: "child process",
    name: () => `nats-server on port ${port} (pid ${child.pid})`,
    isOpen: () => child.exitCode === null && child.signalCode === null,
    close: stop,
  });
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      const nc = await connect({
        servers: url,
        reconnect: false,
        ...(auth ?? {}),
        ...(opts.caFile ? { tls: { caFile: opts.caFile } } : {}),
      });
      await nc.close();
      break;
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return { url, port, stop };
}
