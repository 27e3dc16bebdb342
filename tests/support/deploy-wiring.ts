// What the deployment files (docker-compose.yml, infra/kubernetes/) must agree with in the code, for
// the checks a schema cannot make: the variables the services read, the host's and worker's own
// configuration readers, the listener's routes and port, the metrics the host exports.
import { readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { readAgentConfig } from "../../services/agent/agent-config.ts";
import { readHostConfig } from "../../services/host/host-config.ts";
import { HTTP_ROUTES, parseListenAddress } from "../../services/host/http-listener.ts";
import { createHostMetrics } from "../../services/host/metrics.ts";
import { REPO_ROOT } from "./processes.ts";

/** Read by the operating system or by node itself, not by our code (docs/operations.md says why). */
export const RUNTIME_VARIABLES = new Set(["PATH", "HOME", "USER", "TMPDIR", "NODE_EXTRA_CA_CERTS"]);

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (p.endsWith(".ts") && !p.endsWith(".test.ts")) out.push(p);
  }
  return out;
}

/** Every environment variable a file under services/ reads, with one file that reads it. */
export function variablesRead(): Map<string, string> {
  const read = new Map<string, string>();
  for (const file of sourceFiles(path.join(REPO_ROOT, "services"))) {
    const text = readFileSync(file, "utf8");
    // env.NAME, env["NAME"], and helpers called as someHelper(env, "NAME", ...)
    const uses =
      /\benv(?:\.([A-Z][A-Z0-9_]+)|\[["']([A-Z][A-Z0-9_]+)["']\])|\(\s*env\s*,\s*["']([A-Z][A-Z0-9_]+)["']/g;
    for (const m of text.matchAll(uses)) {
      const variable = m[1] ?? m[2] ?? m[3];
      if (variable && !RUNTIME_VARIABLES.has(variable)) read.set(variable, path.relative(REPO_ROOT, file));
    }
  }
  return read;
}

/** The names in `env` that neither our code nor the runtime reads (a typo, a setting that is gone). */
export function unreadVariables(env: Record<string, string>): string[] {
  const read = variablesRead();
  return Object.keys(env).filter((name) => !read.has(name) && !RUNTIME_VARIABLES.has(name));
}

/** The host's own reader accepts this environment (as at start); returns what it read. */
export function hostConfigOf(env: Record<string, string>) {
  return readHostConfig(env);
}

/** The worker's own reader accepts it, with `models` standing for the file mounted at PI_MODELS_JSON. */
export function workerConfigOf(env: Record<string, string>, models?: string) {
  return readAgentConfig({ ...env, ...(models ? { PI_MODELS_JSON: path.join(REPO_ROOT, models) } : {}) });
}

/** The host's listener as a probe must reach it: the port PI_HTTP_LISTEN binds and the routes it serves. */
export function listener(env: Record<string, string>): { port: number; wildcard: boolean } {
  const config = hostConfigOf(env);
  if (!config.httpListen) throw new Error("PI_HTTP_LISTEN is off: nothing answers probes or scrapes");
  const { host, port } = parseListenAddress(`${config.httpListen.host}:${config.httpListen.port}`);
  return { port, wildcard: host === "0.0.0.0" || host === "::" };
}

export { HTTP_ROUTES };

/**
 * The series the host exports (services/host/metrics.ts) with their label names, from a scrape of its
 * own registry after every kind of count once: histograms with their _bucket, _sum and _count.
 */
export async function exportedMetrics(): Promise<Map<string, Set<string>>> {
  const m = createHostMetrics({ hostId: "h", leasesOwned: async () => 1 });
  m.request("tools.execute");
  m.reply("tools.execute", "ok", 0.01);
  m.toolDecision("Bash", "execute", "allow");
  m.approval("approve");
  m.fence();
  m.takeover();
  m.actorRestart();
  m.sandboxStart();
  m.sandboxFailure();
  const series = new Map<string, Set<string>>();
  for (const line of (await m.scrape()).body.split("\n")) {
    const s = /^([a-z_:][a-z0-9_:]*)(?:\{([^}]*)\})? /.exec(line);
    if (!s) continue;
    const labels = series.get(s[1]!) ?? new Set<string>();
    for (const l of (s[2] ?? "").matchAll(/([a-z_]+)="/g)) labels.add(l[1]!);
    series.set(s[1]!, labels);
  }
  return series;
}
