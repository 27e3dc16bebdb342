// Real child processes for integration tests: the host, the agent worker and the start command,
// readiness detected from their JSON log lines, and always reaped after a test. The host and the
// worker run as the production build the suite made at its start (global-setup.ts, .test-dist/);
// anything else, and every entry when that build is absent (a file run outside the suite's
// projects), runs from the sources with tsx's loader.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ENTRIES } from "../../services/tools/build.ts";
import { type Resource, track } from "./leaks.ts";

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
// node itself runs the entry with tsx's loader: the tsx CLI would put a wrapper process in
// between, and a SIGKILL of the wrapper would leave the real host running.

export interface ManagedProcess {
  child: ChildProcess;
  /** Every stdout/stderr line so far. */
  lines: string[];
  /** Resolves with the first JSON log line whose `event` matches (including earlier lines). */
  waitForEvent(event: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** SIGKILL, then wait for exit. */
  kill(): Promise<void>;
  /** SIGTERM, then SIGKILL after a grace period. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
  /** Its entry in the leak record (tests/support/leaks.ts). */
  resource: Resource;
}

const live = new Set<ManagedProcess>();

export interface SpawnOptions {
  /** `node` runs built JavaScript as it is (dist/, `npm run build`); default: tsx's loader. */
  runner?: "tsx" | "node";
  /** A command the process runs under (e.g. bwrap with a seccomp filter, as a container runtime). */
  wrap?: string[];
  /** The program and its arguments instead of this node and `entry` (e.g. an image's node). */
  command?: string[];
}

/** The suite's own production build (global-setup.ts), relative to the repository. */
export const TEST_DIST = ".test-dist";
/** Entries the build holds (services/tools/build.ts ENTRIES): source -> bundle. */
const BUILT: Record<string, string> = Object.fromEntries(
  Object.entries(ENTRIES).map(([name, source]) => [source, `${name}.js`]),
);

/** The source entry as the suite's build, when that build holds it; else as given. */
function asBuilt(entry: string, opts: SpawnOptions): { entry: string; runner: "tsx" | "node" } {
  const built = BUILT[entry];
  if (opts.runner === undefined && built && existsSync(path.join(REPO_ROOT, TEST_DIST, built)))
    return { entry: path.join(TEST_DIST, built), runner: "node" };
  return { entry, runner: opts.runner ?? "tsx" };
}

export function spawnTs(
  sourceEntry: string,
  env: Record<string, string | undefined>,
  args: string[] = [],
  opts: SpawnOptions = {},
): ManagedProcess {
  const { entry, runner } = asBuilt(sourceEntry, opts);
  const loader = runner === "node" ? [] : ["--import", "tsx"];
  // A V8 profile of every process started (docs/performance.md "Where the time goes").
  const profile = process.env.PIHOST_CPU_PROF_DIR
    ? ["--cpu-prof", `--cpu-prof-dir=${process.env.PIHOST_CPU_PROF_DIR}`]
    : [];
  const argv = [
    ...(opts.wrap ?? []),
    ...(opts.command ?? [process.execPath, ...profile, ...loader, path.join(REPO_ROOT, entry)]),
    ...args,
  ];
  const child = spawn(argv[0]!, argv.slice(1), {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } as NodeJS.ProcessEnv,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const lines: string[] = [];
  const waiters: Array<{ event: string; resolve: (v: Record<string, unknown>) => void }> = [];
  const onLine = (line: string) => {
    lines.push(line);
    if (process.env.PIHOST_TEST_VERBOSE)
      process.stderr.write(`[${path.basename(path.dirname(sourceEntry))}] ${line}\n`);
    let parsed: Record<string, unknown> | null = null;
    try {
      parsed = JSON.parse(line);
    } catch {
      return;
    }
    for (const w of [...waiters]) {
      if (parsed && parsed.event === w.event) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(parsed);
      }
    }
  };
  for (const stream of [child.stdout, child.stderr]) {
    let buf = "";
    stream?.setEncoding("utf8");
    stream?.on("data", (chunk: string) => {
      buf += chunk;
      let i = buf.indexOf("\n");
      while (i >= 0) {
        onLine(buf.slice(0, i));
        buf = buf.slice(i + 1);
        i = buf.indexOf("\n");
      }
    });
  }
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const running = () => child.exitCode === null && child.signalCode === null;
  const proc: ManagedProcess = {
    child,
    lines,
    exited,
    resource: track({
      kind: "child process",
      name: () => `${entry} (pid ${child.pid})`,
      isOpen: running,
      close: () => proc.kill(),
    }),
    waitForEvent(event, timeoutMs = 30_000) {
      for (const line of lines) {
        try {
          const parsed = JSON.parse(line);
          if (parsed.event === event) return Promise.resolve(parsed);
        } catch {}
      }
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          reject(
            new Error(
              `timed out waiting for ${event} from ${entry}; output:\n${lines.slice(-40).join("\n")}`,
            ),
          );
        }, timeoutMs);
        const w = {
          event,
          resolve: (v: Record<string, unknown>) => {
            clearTimeout(timer);
            resolve(v);
          },
        };
        waiters.push(w);
        void exited.then((code) => {
          if (waiters.includes(w)) {
            clearTimeout(timer);
            reject(
              new Error(`${entry} exited (${code}) before ${event}; output:\n${lines.slice(-40).join("\n")}`),
            );
          }
        });
      });
    },
    async kill() {
      if (running()) child.kill("SIGKILL");
      await exited;
      live.delete(proc);
    },
    async stop(graceMs = 5_000) {
      if (running()) {
        child.kill("SIGTERM");
        const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
        await exited;
        clearTimeout(timer);
      }
      live.delete(proc);
    },
  };
  live.add(proc);
  return proc;
}

/** Kills every process a test file started and did not stop (call in afterAll/afterEach). */
export async function reapAll(): Promise<void> {
  await Promise.all([...live].map((p) => p.kill()));
}

export interface StackEnv {
  databaseUrl: string;
  natsUrl: string;
  prefix: string;
  workspaceRoots: string[];
  dataDir: string;
  callLog?: string;
  extra?: Record<string, string>;
}

export function hostEnv(s: StackEnv): Record<string, string> {
  return {
    DATABASE_URL: s.databaseUrl,
    NATS_URL: s.natsUrl,
    PI_PREFIX: s.prefix,
    PI_DEV_MODE: "1",
    PI_DATA_DIR: s.dataDir,
    PI_WORKSPACE_ROOTS: s.workspaceRoots.join(":"),
    PI_TEST_HOOKS: "1",
    // Test workspaces are made by root (this process): let the host grant the sandbox user access
    // through ACLs at projects.create, as `npm start` does (tests of the refusal turn it off).
    PI_SANDBOX_GRANT_ACL: "1",
    // Several hosts (issue #16): a restart after SIGKILL waits one host lease; keep it short.
    PI_HOST_LEASE_MS: "1500",
    PI_HOST_HEARTBEAT_MS: "300",
    // Test hosts run side by side: none takes the default health/metrics port (tests that want it set it).
    PI_HTTP_LISTEN: "off",
    ...s.extra,
  };
}

export function startHost(s: StackEnv): ManagedProcess {
  return spawnTs("services/host/main.ts", hostEnv(s));
}

export function workerEnv(s: StackEnv): Record<string, string> {
  return {
    NATS_URL: s.natsUrl,
    PI_PREFIX: s.prefix,
    PI_DEV_MODE: "1",
    ...(s.callLog ? { PI_SCRIPTED_CALL_LOG: s.callLog } : {}),
    ...s.extra,
  };
}

export function startWorker(s: StackEnv): ManagedProcess {
  return spawnTs("services/agent/main.ts", workerEnv(s));
}
