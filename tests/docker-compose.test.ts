// docker-compose.yml against the compose specification's JSON schema, what the processes need and
// what docs/operations.md documents: three hosts, two workers and the console on the generated NATS
// configuration of infra/team.compose.yaml over TLS, their published ports (loopback only), every
// variable they are given read by the code and documented, the hosts' healthcheck on /readyz at the
// port they listen on, what bubblewrap needs from the runtime, and each process's settings accepted by
// its own configuration reader.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { Ajv } from "ajv";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { generateNatsConfig, natsUsers } from "../services/cli/nats-config.ts";
import { hostRpcUser, parseTeam } from "../services/cli/nats-team.ts";
import {
  HTTP_ROUTES,
  hostConfigOf,
  listener,
  RUNTIME_VARIABLES,
  unreadVariables,
  variablesRead,
  workerConfigOf,
} from "./support/deploy-wiring.ts";
import { REPO_ROOT } from "./support/processes.ts";

interface ComposeService {
  image?: string;
  build?: string | { context?: string; dockerfile?: string; target?: string; args?: Record<string, string> };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null> | string[];
  ports?: Array<string | number | { target?: number; published?: number | string }>;
  volumes?: Array<string | { source?: string; target?: string }>;
  depends_on?: string[] | Record<string, { condition?: string }>;
  user?: string;
  security_opt?: string[];
  devices?: string[];
  read_only?: boolean;
  healthcheck?: { test?: string[] };
}

const HOSTS = ["host1", "host2", "host3"];
/** Settings with a default, not secrets: the env file may set them (docs/operations.md). */
const OPTIONAL = ["PI_DEFAULT_MODEL", "PI_MODEL_PROVIDERS", "PI_MODELS_FILE"];
const WORKERS = ["worker1", "worker2"];
const composeText = readFileSync(path.join(REPO_ROOT, "docker-compose.yml"), "utf8");
/** The file as compose reads it: YAML merge keys (`<<: *host`) resolved, nothing interpolated. */
const raw = parse(composeText, { merge: true }) as Record<string, unknown>;
const team = parseTeam(readFileSync(path.join(REPO_ROOT, "infra/team.compose.yaml"), "utf8"));
const secrets = generateNatsConfig(team, { bcryptCost: 4 }).secrets;

/** The variable docs/operations.md's generator writes into .compose/compose.env for a NATS user. */
const passwordVariable = (user: string) => `PI_NATS_PASSWORD_${user.toUpperCase().replaceAll("-", "_")}`;
/** .compose/compose.env as the documented steps write it for these secrets. */
const envFile: Record<string, string> = {
  PI_POSTGRES_PASSWORD: "0123456789abcdef0123456789abcdef0123456789abcdef",
  ...Object.fromEntries(Object.entries(secrets.users).map(([u, p]) => [passwordVariable(u), p])),
};
const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?[?-][^}]*)?\}/g;

/** Compose's interpolation of `${NAME}`, `${NAME:?message}` and `${NAME:-default}`; unset `:?` throws. */
function interpolate(value: unknown, vars: Record<string, string>): unknown {
  if (typeof value === "string")
    return value.replace(REFERENCE, (ref, name: string) => {
      const v = vars[name];
      if (v !== undefined && v !== "") return v;
      const m = /^\$\{[^:?-]+:?([?-])(.*)\}$/.exec(ref);
      if (m?.[1] === "?") throw new Error(`${name}: ${m[2]}`);
      return m?.[1] === "-" ? (m[2] ?? "") : "";
    });
  if (Array.isArray(value)) return value.map((v) => interpolate(v, vars));
  if (value && typeof value === "object")
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, vars)]));
  return value;
}

const compose = interpolate(raw, envFile) as { services: Record<string, ComposeService> };
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

/**
 * The official compose-spec.json (draft-07), as shipped unchanged in the dclint package. Its
 * `$schema` spells draft-07's id as `https://...schema` without `#`, which Ajv does not know by that
 * name: it is checked, then dropped, so Ajv compiles it as the draft-07 it is (its default draft).
 */
function composeSchema(): Record<string, unknown> {
  const pkg = createRequire(import.meta.url).resolve("dclint/package.json");
  const schema = JSON.parse(
    readFileSync(path.join(path.dirname(pkg), "schemas/compose.schema.json"), "utf8"),
  );
  expect(schema.$schema).toMatch(/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/);
  const { $schema: _draft, ...rest } = schema;
  return rest;
}

describe("docker-compose.yml against the compose specification", () => {
  // strictSchema: an unknown keyword or format in the schema fails here instead of being ignored;
  // strictTypes and strictTuples are lints of how a schema is written (compose-spec.json's style).
  const validate = new Ajv({
    allErrors: true,
    strictSchema: true,
    strictTypes: false,
    strictTuples: false,
  }).compile(composeSchema());

  it("is valid against the compose specification's JSON schema, as written and as interpolated", () => {
    expect((composeSchema() as { $id?: string }).$id).toBe("compose_spec.json");
    for (const doc of [raw, compose]) {
      validate(doc);
      expect(validate.errors ?? []).toEqual([]);
    }
  });

  it("the schema is not vacuous: it refuses a misspelt key, a bad port list and a bad dependency", () => {
    const host1 = (compose.services.host1 ?? {}) as Record<string, unknown>;
    for (const broken of [
      { ...compose, services: { ...compose.services, host1: { ...host1, enviroment: {} } } },
      { ...compose, services: { ...compose.services, host1: { ...host1, ports: "5432" } } },
      { ...compose, services: { ...compose.services, host1: { ...host1, depends_on: { nats: {} } } } },
      { ...compose, servics: {} },
    ])
      expect(validate(broken)).toBe(false);
  });

  it("has no top-level name (Debian's compose 1.29 refuses it) and no version", () => {
    expect(Object.keys(raw)).not.toContain("name");
    expect(Object.keys(raw)).not.toContain("version");
  });

  it("refuses to start without the generated passwords: every variable it needs is written by the steps", () => {
    const refs = [...composeText.matchAll(REFERENCE)];
    const required = new Set(refs.filter((m) => /:\?/.test(m[0])).map((m) => m[1]));
    expect([...required].sort()).toEqual(
      Object.keys(envFile)
        .filter((v) => v !== passwordVariable("alice"))
        .sort(),
    );
    // Anything else has a default and is a setting, never a secret; each is documented.
    for (const m of refs.filter((r) => !/:\?/.test(r[0]))) {
      expect(OPTIONAL, m[0]).toContain(m[1]);
      expect(m[0], "a default (:-)").toMatch(/:-/);
      expect(operations, `${m[1]} in docs/operations.md`).toContain(`\`${m[1]}\``);
    }
    expect(() => interpolate(raw, {})).toThrow(/generate \.compose\/compose\.env/);
    expect(composeText).not.toMatch(/PI_DEV_MODE/);
  });
});

describe("the env file steps of docs/operations.md", () => {
  /** The documented `node -e '...'` step, run as written in a folder holding .compose/secrets.json. */
  function runDocumentedStep(dir: string): Record<string, string> {
    const step = /^node -e '\n([\s\S]*?)'$/m.exec(operations)?.[1];
    expect(step, "the node -e step in docs/operations.md").toBeTruthy();
    execFileSync(process.execPath, ["-e", String(step)], { cwd: dir });
    const file = path.join(dir, ".compose/compose.env");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    return Object.fromEntries(
      readFileSync(file, "utf8")
        .trim()
        .split("\n")
        .map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
    );
  }

  it("write every variable the compose file needs, and keep the Postgres password on a re-run", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "pihost-compose-env-"));
    try {
      mkdirSync(path.join(dir, ".compose"));
      writeFileSync(path.join(dir, ".compose/secrets.json"), JSON.stringify(secrets));
      const first = runDocumentedStep(dir);
      expect(first.PI_POSTGRES_PASSWORD).toMatch(/^[0-9a-f]{48}$/);
      const { PI_POSTGRES_PASSWORD: _pg, ...rest } = first;
      const { PI_POSTGRES_PASSWORD: _fake, ...expected } = envFile;
      expect(rest).toEqual(expected);
      const interpolated = interpolate(raw, first) as { services: Record<string, ComposeService> };
      expect(envOf(interpolated.services.host2 ?? {}).PI_NATS_RPC_PASSWORD).toBe(secrets.users["host2-rpc"]);
      expect(runDocumentedStep(dir).PI_POSTGRES_PASSWORD).toBe(first.PI_POSTGRES_PASSWORD);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("docker-compose.yml", () => {
  it("defines postgres, nats, three hosts, two workers and the console", () => {
    expect(Object.keys(compose.services).sort()).toEqual(
      ["nats", "postgres", "web", ...HOSTS, ...WORKERS].sort(),
    );
    expect(service("postgres").image).toMatch(/^postgres:16/);
    expect(service("nats").image).toMatch(/^nats:2\.10/);
  });

  it("publishes only on this machine's loopback: Postgres, NATS and its websocket, each host's listener, the console", () => {
    expect(service("postgres").ports).toEqual(["127.0.0.1:5432:5432"]);
    expect(service("nats").ports).toEqual(["127.0.0.1:4222:4222", "127.0.0.1:8443:8443"]);
    expect(publishedPorts(service("postgres"))).toContain(5432);
    expect(publishedPorts(service("nats"))).toContain(4222);
    // A scraper on this machine reaches every host's /metrics, each on its own port.
    for (const [i, name] of HOSTS.entries())
      expect(service(name).ports, name).toEqual([`127.0.0.1:${9464 + i}:9464`]);
    for (const name of WORKERS) expect(service(name).ports, name).toBeUndefined();
    expect(service("web").ports).toEqual(["127.0.0.1:8080:8080"]);
    for (const s of Object.values(compose.services))
      for (const p of s.ports ?? []) expect(String(p)).toMatch(/^127\.0\.0\.1:/);
  });

  it("runs NATS with JetStream and the generated config from infra/nats-compose.conf, over TLS", () => {
    const nats = service("nats");
    const command = Array.isArray(nats.command) ? nats.command : String(nats.command ?? "").split(/\s+/);
    expect(command).toContain("-js");
    const configPath = command[command.indexOf("-c") + 1];
    expect(configPath).toBeTruthy();
    const mount = (nats.volumes ?? []).find((v) => typeof v === "string" && v.split(":")[1] === configPath);
    expect(mount, `a volume mounting ${configPath}`).toBeTypeOf("string");
    const source = String(mount).split(":")[0] ?? "";
    expect(path.normalize(source)).toBe("infra/nats-compose.conf");
    expect(existsSync(path.join(REPO_ROOT, source))).toBe(true);
    const conf = readFileSync(path.join(REPO_ROOT, source), "utf8");
    expect(conf).toMatch(/max_payload:\s*8MB/);
    expect(conf).toMatch(/^# Generated by `pihost nats-config/);
    expect(conf).toContain(`store_dir: "${team.jetstream.storeDir}"`);
    expect((nats.volumes ?? []).some((v) => v === `natsdata:${team.jetstream.storeDir}`)).toBe(true);
    // The team's certificates are inside the folder compose mounts from .compose/tls (infra/tls-certs.sh).
    const tlsMount = (nats.volumes ?? []).map(String).find((v) => v.startsWith("./.compose/tls:"));
    const tlsDir = String(tlsMount).split(":")[1];
    expect(tlsMount).toMatch(/:ro$/);
    for (const file of [team.tls?.cert, team.tls?.key, team.websocket?.tls?.cert, team.websocket?.tls?.key])
      expect(path.dirname(String(file)), String(file)).toBe(tlsDir);
  });

  it("builds hosts and workers from the Dockerfile's runtime (its last stage), the console from its web target", () => {
    const dockerfile = readFileSync(path.join(REPO_ROOT, "Dockerfile"), "utf8");
    const stages = [...dockerfile.matchAll(/^FROM (\S+) AS (\S+)$/gm)].map((m) => ({
      from: m[1],
      name: m[2],
    }));
    expect(stages.map((st) => st.name)).toEqual(["build", "deps", "web", "runtime"]);
    // A supported Node LTS (22 or 24), not Node 20 (end of life).
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:(22|24)-bookworm-slim$/m);
    expect(dockerfile).toMatch(/RUN npm ci --omit=dev/);
    expect(dockerfile).toMatch(/^CMD \["node", "dist\/host\.js"\]$/m);
    for (const name of [...HOSTS, ...WORKERS]) {
      const build = service(name).build;
      const context = typeof build === "string" ? build : build?.context;
      expect(context, `${name} build context`).toBe(".");
      expect(typeof build === "string" || build?.target === undefined, `${name}: the default stage`).toBe(
        true,
      );
    }
    expect(service("web").build).toMatchObject({ context: ".", target: "web" });
    for (const name of HOSTS) expect(service(name).command).toEqual(["node", "dist/host.js"]);
    for (const name of WORKERS) {
      expect(service(name).command).toEqual(["node", "dist/agent.js"]);
      expect(service(name).user).toBe("node");
      expect(service(name).read_only).toBe(true);
    }
  });

  it("gives the hosts exactly what bubblewrap needs from Docker, and the workers none of it", () => {
    for (const name of HOSTS) {
      expect(service(name).security_opt?.slice().sort(), name).toEqual([
        "apparmor=unconfined",
        "seccomp=unconfined",
        "systempaths=unconfined",
      ]);
      expect(service(name).devices).toEqual(["/dev/net/tun:/dev/net/tun"]);
      expect(service(name)).not.toHaveProperty("privileged");
      expect(service(name)).not.toHaveProperty("cap_add");
    }
    for (const name of [...WORKERS, "web"]) {
      expect(service(name).security_opt, name).toBeUndefined();
      expect(service(name).devices, name).toBeUndefined();
    }
  });

  it("checks each host's health on /readyz at the port it listens on; workers wait for a healthy host", () => {
    for (const name of HOSTS) {
      const env = envOf(service(name));
      const { port, wildcard } = listener(env);
      expect(wildcard, "reachable by a scraper on the compose network").toBe(true);
      const test = (service(name).healthcheck?.test ?? []).join(" ");
      expect(test).toContain(`http://127.0.0.1:${port}${HTTP_ROUTES.ready}`);
      expect(publishedPorts(service(name)).length).toBe(1);
      expect(String(service(name).ports?.[0]).endsWith(`:${port}`)).toBe(true);
    }
    for (const name of WORKERS) {
      const deps = service(name).depends_on as Record<string, { condition?: string }>;
      expect(deps.host1?.condition, name).toBe("service_healthy");
    }
  });

  it("gives every host what it requires, with its own PI_HOST_ID and data volume, one shared workspace", () => {
    const ids = new Set<string>();
    const data = new Set<string>();
    for (const name of HOSTS) {
      const env = envOf(service(name));
      expect(env.DATABASE_URL).toBeTruthy();
      expect(env.NATS_URL).toBeTruthy();
      expect(env.PI_WORKSPACE_ROOTS).toBe("/workspaces");
      expect(env.PI_DEV_MODE).toBeUndefined();
      expect(env.PI_HOST_ID).toBe(name);
      ids.add(String(env.PI_HOST_ID));
      const volumes = (service(name).volumes ?? []).map(String);
      expect(volumes).toContain("workspaces:/workspaces");
      const dataVolume = volumes.find((v) => v.endsWith(`:${env.PI_DATA_DIR}`));
      expect(dataVolume, `${name} data volume`).toBeTruthy();
      data.add(String(dataVolume));
      expect(dependsOn(service(name))).toEqual(expect.arrayContaining(["postgres", "nats"]));
    }
    expect(ids.size).toBe(HOSTS.length);
    expect(data.size).toBe(HOSTS.length);
    for (const name of WORKERS) expect(dependsOn(service(name))).toContain("nats");
  });

  it("points NATS_URL at the nats service and DATABASE_URL at the postgres service", () => {
    const pgEnv = envOf(service("postgres"));
    expect(pgEnv.POSTGRES_PASSWORD).toBe(envFile.PI_POSTGRES_PASSWORD);
    for (const name of [...HOSTS, ...WORKERS]) {
      const env = envOf(service(name));
      const nats = new URL(String(env.NATS_URL));
      expect(nats.protocol).toBe("nats:");
      expect(nats.hostname).toBe("nats");
      expect(nats.port === "" || nats.port === "4222").toBe(true);
      expect(env.PI_PREFIX).toBe(team.prefix);
      if (env.DATABASE_URL) {
        const db = new URL(env.DATABASE_URL);
        expect(db.hostname).toBe("postgres");
        expect(db.port === "" || db.port === "5432").toBe(true);
        expect(db.pathname).toBe(`/${pgEnv.POSTGRES_DB ?? "postgres"}`);
        expect(decodeURIComponent(db.password)).toBe(pgEnv.POSTGRES_PASSWORD);
      }
    }
  });

  it("keeps workers away from the database (docs/architecture.md, Processes)", () => {
    for (const name of WORKERS) expect(envOf(service(name)).DATABASE_URL, name).toBeUndefined();
  });

  it("gives hosts and workers only variables the code (or node) reads, each documented in docs/operations.md", () => {
    const documented = documentedVariables();
    for (const name of [...HOSTS, ...WORKERS]) {
      const env = envOf(service(name));
      expect(unreadVariables(env), name).toEqual([]);
      for (const variable of Object.keys(env)) {
        if (variable === "HOME") continue;
        expect(documented.has(variable), `${variable} (${name}) in docs/operations.md`).toBe(true);
      }
    }
  });

  it("each host's and worker's settings pass its own configuration reader (as at start)", () => {
    for (const name of HOSTS) {
      const config = hostConfigOf(envOf(service(name)));
      expect(config.devMode).toBe(false);
      expect(config.hostId).toBe(name);
      expect(config.workspaceRoots).toEqual(["/workspaces"]);
      expect(config.sandboxGrantAcl).toBe(true);
    }
    for (const name of WORKERS) {
      const written = (raw.services as Record<string, ComposeService>)[name]?.volumes ?? [];
      const models = String(written.map(String).find((v) => v.includes("models.json")));
      const source = /^\$\{PI_MODELS_FILE:-\.\/([^}]+)\}:(\S+):ro$/.exec(models);
      expect(source, models).not.toBeNull();
      expect(envOf(service(name)).PI_MODELS_JSON).toBe(source![2]);
      const config = workerConfigOf(envOf(service(name)), source![1]);
      expect(config.workerId).toBe(name);
      expect(config.models.fileProviders).toEqual(["local"]);
    }
  });

  it("trusts the compose CA in every process that talks to NATS (NODE_EXTRA_CA_CERTS, mounted read-only)", () => {
    for (const name of [...HOSTS, ...WORKERS]) {
      const ca = envOf(service(name)).NODE_EXTRA_CA_CERTS;
      expect((service(name).volumes ?? []).map(String), name).toContain(`./.compose/tls/ca.pem:${ca}:ro`);
    }
  });

  it("serves the console built for the websocket NATS listens on, from an origin NATS lets in", () => {
    const web = service("web").build as { args?: Record<string, string> };
    const ws = new URL(String(web.args?.PI_WEB_WS_URL));
    expect(ws.protocol).toBe("wss:");
    expect(web.args?.PI_WEB_PREFIX).toBe(team.prefix);
    const wsPort = String(team.websocket?.listen).split(":").pop();
    expect(service("nats").ports).toContain(`127.0.0.1:${ws.port}:${wsPort}`);
    const published = publishedPorts(service("web"))[0];
    expect(team.websocket?.allowedOrigins).toContain(`http://localhost:${published}`);
  });
});

describe("docker-compose.yml on the generated NATS configuration", () => {
  it("infra/team.compose.yaml has the three hosts, two workers and a person", () => {
    expect(team.hosts).toEqual(HOSTS);
    expect(team.workers).toEqual(WORKERS);
    expect(team.people.length).toBeGreaterThan(0);
  });

  it("each host connects as its two users and each worker as its own, with the generated password", () => {
    const teamUsers = new Set(natsUsers(team).map((u) => u.name));
    for (const name of HOSTS) {
      const env = envOf(service(name));
      expect(env.NATS_USER).toBe(name);
      expect(env.PI_NATS_RPC_USER).toBe(hostRpcUser(name));
      expect(teamUsers.has(String(env.NATS_USER)) && teamUsers.has(String(env.PI_NATS_RPC_USER))).toBe(true);
      expect(env.NATS_PASSWORD).toBe(secrets.users[name]);
      expect(env.PI_NATS_RPC_PASSWORD).toBe(secrets.users[hostRpcUser(name)]);
    }
    for (const name of WORKERS) {
      const env = envOf(service(name));
      expect(env.NATS_USER).toBe(name);
      expect(env.PI_WORKER_ID).toBeUndefined();
      expect(env.NATS_PASSWORD).toBe(secrets.users[name]);
    }
    const used = [...HOSTS, ...WORKERS].flatMap((name) => {
      const env = envOf(service(name));
      return [env.NATS_USER, env.PI_NATS_RPC_USER].filter(Boolean);
    });
    expect(new Set(used).size).toBe(used.length);
  });

  it("the settings admins are people of the team", () => {
    const people = new Set(team.people.map((p) => p.name));
    for (const name of HOSTS)
      for (const admin of String(envOf(service(name)).PI_SETTINGS_ADMINS ?? "")
        .split(",")
        .filter(Boolean))
        expect(people.has(admin), admin).toBe(true);
  });
});

describe("docs/operations.md configuration table", () => {
  it("lists every environment variable the services read, and the runtime's that compose sets", () => {
    const documented = documentedVariables();
    const read = variablesRead();
    expect(read.size).toBeGreaterThan(5);
    for (const [variable, file] of read) {
      expect(documented.has(variable), `${variable} (read in ${file}) in docs/operations.md`).toBe(true);
    }
    expect(RUNTIME_VARIABLES.has("NODE_EXTRA_CA_CERTS")).toBe(true);
    expect(documented.has("NODE_EXTRA_CA_CERTS")).toBe(true);
  });
});
