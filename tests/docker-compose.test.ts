// docker-compose.yml against what the processes need and what docs/operations.md documents: the four
// services, their published ports, every variable they are given documented, and the host's
// required settings pointing at the compose services.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { REPO_ROOT } from "./support/processes.ts";

interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: Array<string | number | { target?: number; published?: number | string }>;
  volumes?: Array<string | { source?: string; target?: string }>;
  depends_on?: string[] | Record<string, unknown>;
  user?: string;
}

const compose = parse(readFileSync(path.join(REPO_ROOT, "docker-compose.yml"), "utf8")) as {
  services: Record<string, ComposeService>;
};
const operations = readFileSync(path.join(REPO_ROOT, "docs/operations.md"), "utf8");

function service(name: string): ComposeService {
  const s = compose.services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
}

function envOf(s: ComposeService): Record<string, string> {
  const out: Record<string, string> = {};
  if (Array.isArray(s.environment)) {
    for (const entry of s.environment) {
      const eq = entry.indexOf("=");
      out[eq < 0 ? entry : entry.slice(0, eq)] = eq < 0 ? "" : entry.slice(eq + 1);
    }
  } else {
    for (const [k, v] of Object.entries(s.environment ?? {})) out[k] = v === null ? "" : String(v);
  }
  return out;
}

/** Published (machine-side) ports: "5432", "127.0.0.1:5432:5432", "5432:5432/tcp", or the long form. */
function publishedPorts(s: ComposeService): number[] {
  return (s.ports ?? []).map((p) => {
    if (typeof p === "number") return p;
    if (typeof p === "object") return Number(p.published ?? p.target);
    const parts = p.replace(/\/(tcp|udp)$/, "").split(":");
    return Number(parts.length === 1 ? parts[0] : parts[parts.length - 2]);
  });
}

function dependsOn(s: ComposeService): string[] {
  if (!s.depends_on) return [];
  return Array.isArray(s.depends_on) ? s.depends_on : Object.keys(s.depends_on);
}

/** Variable names in the first column of docs/operations.md's configuration table. */
function documentedVariables(): Set<string> {
  const names = new Set<string>();
  for (const line of operations.split("\n")) {
    const m = /^\|\s*`([A-Z][A-Z0-9_]*)`\s*\|/.exec(line);
    if (m?.[1]) names.add(m[1]);
  }
  return names;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir)) {
    const p = path.join(dir, entry);
    if (statSync(p).isDirectory()) out.push(...sourceFiles(p));
    else if (p.endsWith(".ts") && !p.endsWith(".test.ts")) out.push(p);
  }
  return out;
}

describe("docker-compose.yml", () => {
  it("defines postgres, nats, host and agent", () => {
    expect(Object.keys(compose.services)).toEqual(
      expect.arrayContaining(["postgres", "nats", "host", "agent"]),
    );
    expect(service("postgres").image).toMatch(/^postgres:16/);
    expect(service("nats").image).toMatch(/^nats:2\.10/);
  });

  it("publishes Postgres on 5432 and NATS on 4222", () => {
    expect(publishedPorts(service("postgres"))).toContain(5432);
    expect(publishedPorts(service("nats"))).toContain(4222);
  });

  it("runs NATS with JetStream and the development config from infra/", () => {
    const nats = service("nats");
    const command = Array.isArray(nats.command) ? nats.command : String(nats.command ?? "").split(/\s+/);
    expect(command).toContain("-js");
    const configPath = command[command.indexOf("-c") + 1];
    expect(configPath).toBeTruthy();
    const mount = (nats.volumes ?? []).find((v) => typeof v === "string" && v.split(":")[1] === configPath);
    expect(mount, `a volume mounting ${configPath}`).toBeTypeOf("string");
    const source = String(mount).split(":")[0] ?? "";
    expect(existsSync(path.join(REPO_ROOT, source))).toBe(true);
    expect(readFileSync(path.join(REPO_ROOT, source), "utf8")).toMatch(/max_payload:\s*8MB/);
  });

  it("builds host and agent from the root Dockerfile", () => {
    for (const name of ["host", "agent"]) {
      const build = service(name).build;
      const context = typeof build === "string" ? build : build?.context;
      expect(context, `${name} build context`).toBe(".");
    }
    const dockerfile = readFileSync(path.join(REPO_ROOT, "Dockerfile"), "utf8");
    expect(dockerfile).toMatch(/^FROM node:20-bookworm-slim/m);
    expect(dockerfile).toMatch(/npm ci/);
    expect(String(service("host").command)).toMatch(/services\/host\/main\.ts/);
    expect(String(service("agent").command)).toMatch(/services\/agent\/main\.ts/);
  });

  it("gives the host everything it requires", () => {
    const env = envOf(service("host"));
    expect(env.DATABASE_URL).toBeTruthy();
    expect(env.NATS_URL).toBeTruthy();
    expect(env.PI_WORKSPACE_ROOTS).toBeTruthy();
    expect(env.PI_DEV_MODE === "1" || Boolean(env.NATS_USER)).toBe(true);
    expect(dependsOn(service("host"))).toEqual(expect.arrayContaining(["postgres", "nats"]));
    expect(dependsOn(service("agent"))).toContain("nats");
  });

  it("points NATS_URL at the nats service and DATABASE_URL at the postgres service", () => {
    const pgEnv = envOf(service("postgres"));
    for (const name of ["host", "agent"]) {
      const env = envOf(service(name));
      const nats = new URL(String(env.NATS_URL));
      expect(nats.protocol).toBe("nats:");
      expect(nats.hostname).toBe("nats");
      expect(nats.port === "" || nats.port === "4222").toBe(true);
      if (env.DATABASE_URL) {
        const db = new URL(env.DATABASE_URL);
        expect(db.hostname).toBe("postgres");
        expect(db.port === "" || db.port === "5432").toBe(true);
        expect(db.pathname).toBe(`/${pgEnv.POSTGRES_DB ?? "postgres"}`);
        if (pgEnv.POSTGRES_PASSWORD) expect(decodeURIComponent(db.password)).toBe(pgEnv.POSTGRES_PASSWORD);
      }
    }
  });

  it("keeps workers away from the database (DESIGN section 2)", () => {
    expect(envOf(service("agent")).DATABASE_URL).toBeUndefined();
  });

  it("documents every variable the host and agent are given in docs/operations.md", () => {
    const documented = documentedVariables();
    for (const name of ["host", "agent"]) {
      for (const variable of Object.keys(envOf(service(name)))) {
        expect(documented.has(variable), `${variable} (${name}) in docs/operations.md`).toBe(true);
      }
    }
  });
});

describe("docs/operations.md configuration table", () => {
  it("lists every environment variable the services read", () => {
    const documented = documentedVariables();
    const osVariables = new Set(["PATH", "HOME", "USER", "TMPDIR"]);
    const read = new Map<string, string>();
    for (const file of sourceFiles(path.join(REPO_ROOT, "services"))) {
      const text = readFileSync(file, "utf8");
      // env.NAME, env["NAME"], and helpers called as someHelper(env, "NAME", ...)
      const uses =
        /\benv(?:\.([A-Z][A-Z0-9_]+)|\[["']([A-Z][A-Z0-9_]+)["']\])|\(\s*env\s*,\s*["']([A-Z][A-Z0-9_]+)["']/g;
      for (const m of text.matchAll(uses)) {
        const variable = m[1] ?? m[2] ?? m[3];
        if (variable && !osVariables.has(variable)) read.set(variable, path.relative(REPO_ROOT, file));
      }
    }
    expect(read.size).toBeGreaterThan(5);
    for (const [variable, file] of read) {
      expect(documented.has(variable), `${variable} (read in ${file}) in docs/operations.md`).toBe(true);
    }
  });
});
