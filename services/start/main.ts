// `npm start`: a complete development pi-host on one machine. Finds or starts Postgres and NATS
// (infra.ts), serves the web console with Vite (web-console.ts), then runs the host and one agent
// worker as child processes and supervises them: any unexpected exit stops everything;
// SIGINT/SIGTERM/SIGHUP stop everything in order.
import { type ChildProcess, spawn } from "node:child_process";
import fs, { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createLogger, errorFields } from "../runtime/log.ts";
import { probeUrlsFromEnv, redactUrl, resolveNats, resolvePostgres } from "./infra.ts";
import { chooseWebPort, consoleSocket, startWebConsole, WEB_CONFIG_FILE, webOrigins } from "./web-console.ts";

const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const TSX = path.join(REPO_ROOT, "node_modules/.bin/tsx");
const READY_TIMEOUT_MS = 120_000;
const CHILD_GRACE_MS = 15_000;

const log = createLogger("start");
const env = process.env;
const dataDir = path.resolve(env.PI_DATA_DIR || ".pihost-data");
const prefix = env.PI_PREFIX || "pi";
/** Development grants the sandbox user access to new workspaces (docs/operations.md); 0 turns it off. */
const grantAcl = env.PI_SANDBOX_GRANT_ACL ?? "1";
const GRANT_LINE = ["0", "false", "off"].includes(grantAcl.trim().toLowerCase())
  ? `  * A workspace the sandbox user cannot use is refused at \`project create\` with
    WORKSPACE_NOT_USABLE (PI_SANDBOX_GRANT_ACL=${grantAcl}).`
  : `  * A workspace the sandbox user cannot use is opened to it through POSIX ACLs at
    \`project create\` (PI_SANDBOX_GRANT_ACL=${grantAcl}; 0 refuses it with WORKSPACE_NOT_USABLE).`;

const BANNER = `
================================ pi-host: DEVELOPMENT MODE ================================
  * NATS without authentication: any local process can connect, and the principal named in
    a subject (${prefix}.rpc.<principal>.<method>) is taken as given. Do not expose these ports.
  * Plan is planning intent, not a sandbox: Bash stays available under the permission mode,
    and under "auto" it may change files in the workspace.
${GRANT_LINE}
  * Data folder: ${dataDir}
  Production: run services/host/main.ts and services/agent/main.ts with NATS credentials
  ("pihost nats-config" writes its NATS configuration; see docs/operations.md).
===========================================================================================
`;

interface Child {
  name: "host" | "agent";
  proc: ChildProcess;
  exited: Promise<void>;
  /** Resolves on the first JSON log line with this event; rejects if the child exits first. */
  waitFor(event: string, timeoutMs: number): Promise<Record<string, unknown>>;
}

/** What this process started (embedded Postgres, nats-server, the console), stopped in reverse order. */
const services: Array<{ stop(): Promise<void> }> = [];
const children: Child[] = [];
let stopping = false;
/** The infrastructure step in flight, so a shutdown can wait for it and then stop what it started. */
let pending: Promise<unknown> = Promise.resolve();

function startChild(name: Child["name"], entry: string, childEnv: NodeJS.ProcessEnv): Child {
  const proc = spawn(TSX, [path.join(REPO_ROOT, entry)], {
    cwd: REPO_ROOT,
    env: childEnv,
    // Own process group: a terminal Ctrl-C reaches only this supervisor, which forwards it once.
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const seen = new Map<string, Record<string, unknown>>();
  const waiters = new Map<string, Array<(v: Record<string, unknown>) => void>>();
  const forward = (out: NodeJS.WriteStream, line: string) => {
    let parsed: Record<string, unknown> | null = null;
    try {
      const v = JSON.parse(line);
      if (v && typeof v === "object") parsed = v as Record<string, unknown>;
    } catch {}
    out.write(parsed ? `${line}\n` : `[${name}] ${line}\n`);
    if (parsed && typeof parsed.event === "string") {
      if (!seen.has(parsed.event)) seen.set(parsed.event, parsed);
      for (const resolve of waiters.get(parsed.event) ?? []) resolve(parsed);
      waiters.delete(parsed.event);
    }
  };
  for (const [stream, out] of [
    [proc.stdout, process.stdout],
    [proc.stderr, process.stderr],
  ] as const) {
    let buf = "";
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      buf += chunk;
      for (let i = buf.indexOf("\n"); i >= 0; i = buf.indexOf("\n")) {
        forward(out, buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
    stream?.on("end", () => {
      if (buf) forward(out, buf);
      buf = "";
    });
  }
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  proc.once("error", (err) => log.error("start.child_error", { child: name, ...errorFields(err) }));
  const child: Child = {
    name,
    proc,
    exited,
    waitFor(event, timeoutMs) {
      const hit = seen.get(event);
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`${name} did not log ${event} within ${timeoutMs} ms`)),
          timeoutMs,
        );
        const list = waiters.get(event) ?? [];
        list.push((v) => {
          clearTimeout(timer);
          resolve(v);
        });
        waiters.set(event, list);
        void exited.then(() => {
          clearTimeout(timer);
          reject(
            new Error(`${name} exited (code ${proc.exitCode}, signal ${proc.signalCode}) before ${event}`),
          );
        });
      });
    },
  };
  void exited.then(() => {
    if (stopping) return;
    log.error("start.child_exited", { child: name, code: proc.exitCode, signal: proc.signalCode });
    void shutdown(1, `${name} exited unexpectedly`);
  });
  children.push(child);
  return child;
}

/** SIGKILL for the child's whole process group: the tsx wrapper and the node process under it. */
function killGroup(child: Child): void {
  const pid = child.proc.pid;
  if (pid === undefined || child.proc.exitCode !== null || child.proc.signalCode !== null) return;
  try {
    process.kill(-pid, "SIGKILL");
  } catch {
    child.proc.kill("SIGKILL");
  }
}

async function stopChild(child: Child, signal: NodeJS.Signals): Promise<void> {
  const { proc } = child;
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  // To the tsx wrapper only; it relays the signal once to the node process it runs.
  proc.kill(signal);
  const timer = setTimeout(() => {
    log.warn("start.child_killed", { child: child.name, afterMs: CHILD_GRACE_MS });
    killGroup(child);
  }, CHILD_GRACE_MS);
  await child.exited;
  clearTimeout(timer);
}

/** Stops the worker, then the host, then what infra.ts started; exits with `code`. */
async function shutdown(code: number, reason: string, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.info("start.stopping", { reason });
  // The worker first: the host then sees its turns end instead of racing a live worker.
  for (const name of ["agent", "host"] as const) {
    for (const child of children.filter((c) => c.name === name)) await stopChild(child, signal);
  }
  await pending.catch(() => {});
  for (const service of [...services].reverse()) {
    await service.stop().catch((err) => log.error("start.infra_stop_failed", errorFields(err)));
  }
  log.info("start.stopped", { code });
  process.exit(code);
}

let firstSignalAt = 0;

function onSignal(signal: NodeJS.Signals) {
  const now = Date.now();
  if (!stopping) {
    firstSignalAt = now;
    void shutdown(0, signal, signal === "SIGHUP" ? "SIGTERM" : signal);
    return;
  }
  // npm and tsx relay the terminal's Ctrl-C, so one keypress can arrive twice: only a signal well
  // after the first one means "do not wait for the grace period".
  if (firstSignalAt === 0) firstSignalAt = now;
  if (now - firstSignalAt < 2_000) return;
  log.warn("start.signal_repeated", { signal });
  for (const c of children) killGroup(c);
}

/** Tracks a service being resolved: once up it is registered for shutdown before anyone else resumes. */
function startService<T extends { stop(): Promise<void> }>(p: Promise<T>): Promise<T> {
  const tracked = p.then((service) => {
    services.push(service);
    return service;
  });
  pending = tracked;
  return tracked;
}

async function main(): Promise<void> {
  for (const s of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.on(s, onSignal);
  process.stderr.write(BANNER);
  log.info("start.dev_mode", {
    natsAuth: false,
    principals: "taken from the subject as given",
    plan: "planning intent; Bash may mutate the workspace under auto",
    dataDir,
    prefix,
    sandboxGrantAcl: grantAcl,
  });
  fs.mkdirSync(dataDir, { recursive: true });
  const { pgProbeUrl, natsProbeUrl } = probeUrlsFromEnv(env);

  const postgres = await startService(
    resolvePostgres({ databaseUrl: env.DATABASE_URL, probeUrl: pgProbeUrl, dataDir, log }),
  );
  if (stopping) return;
  // The console's port comes first: a spawned NATS allows exactly its origins on its WebSocket.
  const webPort = existsSync(WEB_CONFIG_FILE) ? await chooseWebPort(env) : undefined;
  if (webPort === undefined) {
    log.warn("infra.web_off", {
      console: "off",
      reason: `${path.relative(REPO_ROOT, WEB_CONFIG_FILE)} is missing: this checkout has no web console`,
      fix: "check out a version with services/web",
    });
  }
  const nats = await startService(
    resolveNats({
      natsUrl: env.NATS_URL,
      probeUrl: natsProbeUrl,
      dataDir,
      log,
      ...(webPort === undefined ? {} : { webOrigins: webOrigins(webPort) }),
    }),
  );
  if (stopping) return;
  let webUrl: string | undefined;
  if (webPort !== undefined) {
    const socket = consoleSocket({ nats, envWsUrl: env.PI_WEB_WS_URL, webPort, log });
    if (socket.on) {
      try {
        const web = await startService(startWebConsole({ port: webPort, wsUrl: socket.wsUrl, prefix, log }));
        webUrl = web.url;
      } catch (err) {
        if (stopping) return;
        log.warn("infra.web_off", {
          console: "off",
          reason: `Vite's dev server did not start on 127.0.0.1:${webPort}: ${(err as Error).message}`,
          fix: "free that port or set PI_WEB_PORT to another one",
        });
      }
      if (stopping) return;
    }
  }

  const common: NodeJS.ProcessEnv = {
    ...env,
    NATS_URL: nats.url,
    PI_DEV_MODE: "1",
    PI_DATA_DIR: dataDir,
    PI_PREFIX: prefix,
  };
  const host = startChild("host", "services/host/main.ts", {
    ...common,
    DATABASE_URL: postgres.url,
    PI_SANDBOX_GRANT_ACL: grantAcl,
  });
  await host.waitFor("host.ready", READY_TIMEOUT_MS);
  if (stopping) return;
  // The worker holds no database access (docs/architecture.md "Processes"): it never gets DATABASE_URL.
  const { DATABASE_URL: _omitted, ...workerEnv } = common;
  const worker = startChild("agent", "services/agent/main.ts", workerEnv);
  await worker.waitFor("worker.ready", READY_TIMEOUT_MS);
  if (stopping) return;
  log.info("start.ready", {
    natsUrl: nats.url,
    prefix,
    databaseUrl: redactUrl(postgres.url),
    postgres: postgres.source,
    nats: nats.source,
    dataDir,
    webUrl: webUrl ?? null,
  });
}

main().catch((err) => {
  if (stopping) return; // a child that was being waited for was stopped on purpose
  log.error("start.failed", errorFields(err));
  void shutdown(1, "start failed");
});
