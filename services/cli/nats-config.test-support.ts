// Helpers of the NATS configuration tests (nats-config.test.ts, nats-config-server.test.ts): a free
// loopback port, temporary folders, `nats-server -t`, the team file they share, and a subscriber.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { NatsConnection } from "@nats-io/transport-node";

export const run = promisify(execFile);

/** A loopback port nothing listens on now (services/start has one too; service folders do not share code). */
export function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}
export const COST = 4;
const dirs: string[] = [];

export async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "pihost-natsconf-"));
  dirs.push(dir);
  return dir;
}
/** Removes the folders tempDir made (each test file's afterAll). */
export async function removeTempDirs(): Promise<void> {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
}

/** `nats-server -t`: exit 0 and "valid", or the server's complaint. */
export async function serverAccepts(config: string): Promise<string> {
  const file = path.join(await tempDir(), "nats.conf");
  await writeFile(file, config);
  try {
    const r = await run("nats-server", ["-c", file, "-t"]);
    return `${r.stdout}${r.stderr}`;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    return `REFUSED ${e.stderr ?? ""}${e.stdout ?? ""}${e.message}`;
  }
}

export const TEAM = (listen: string, storeDir: string) => `
prefix: tp
listen: ${listen}
jetstream: { storeDir: ${storeDir} }
hosts: [h1]
workers: [w, w2]
plugins: [{ user: plug, id: lint }]
people: [alice, bob, { name: root, admin: true }]
`;

/** Waits for `n` messages or `ms`, whichever first; returns the subjects received. */
export function collect(nc: NatsConnection, subject: string, opts: { queue?: string } = {}) {
  const got: string[] = [];
  const sub = nc.subscribe(subject, {
    ...opts,
    callback: (err, m) => {
      if (!err) got.push(m.subject);
    },
  });
  return { got, sub };
}

export const settle = () => new Promise((r) => setTimeout(r, 30));
