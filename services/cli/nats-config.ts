// The production NATS configuration from one team file (issue #11 clause 7): who may publish and
// subscribe what, one NATS user per host connection, worker, plugin and person. Pure apart from
// randomness and bcrypt: reading and writing files is the `pihost nats-config` command's job.
import { randomBytes } from "node:crypto";
import bcrypt from "bcryptjs";
import { parseDocument } from "yaml";
import type { AgentMethod } from "../protocol/methods.ts";
import {
  agentSubject,
  eventWildcard,
  hostWildcard,
  inboxPrefix,
  rpcSubject,
  rpcWildcard,
  WORKER_QUEUE,
  workerAnyHostSubject,
  workerCancelWildcard,
  workerGoodbyeSubject,
  workerGoodbyeWildcard,
  workerHostWildcard,
} from "../protocol/subjects.ts";
import { PREFIX_TOKEN } from "../protocol/tokens.ts";
import { UsageError } from "./cli-error.ts";
import { type Fail, isMapping, list, mapping, show, token } from "../protocol/config-fields.ts";

export interface Team {
  /** The subject prefix (`PI_PREFIX`). */
  prefix: string;
  /** `host:port` or a port alone (all interfaces). */
  listen: string;
  /** A byte count or a size as nats-server reads it (`8MB`: K/KB/M/MB/G/GB, KB = 1024). */
  maxPayload: number | string;
  jetstream: { storeDir?: string; maxMemoryStore: number | string; maxFileStore: number | string };
  hosts: string[];
  workers: string[];
  plugins: Array<{ user: string; id: string }>;
  people: Array<{ name: string; admin: boolean }>;
  tls?: { cert: string; key: string; ca?: string; verify?: boolean };
  websocket?: {
    listen: string;
    allowedOrigins: string[];
    tls?: { cert: string; key: string };
    noTls?: true;
  };
}

/** The secrets file: every user's plain password, keyed by user name. */
export interface Secrets {
  version: 1;
  users: Record<string, string>;
}

export type NatsRole = "host" | "host-rpc" | "worker" | "plugin" | "person" | "admin";

/** One NATS user and exactly what it may do. */
export interface NatsUser {
  name: string;
  role: NatsRole;
  publish: { allow: string[] } | { deny: string[] };
  subscribe: string[];
  /** May publish one reply to each request it received (nats-server `allow_responses`). */
  allowResponses?: true;
}

export const DEFAULT_PREFIX = "pi";
export const DEFAULT_LISTEN = "0.0.0.0:4222";
export const DEFAULT_MAX_PAYLOAD = "8MB";
export const DEFAULT_BCRYPT_COST = 11;
export const MIN_BCRYPT_COST = 4;
/** A host's rpc user is `<host>-rpc`, itself a subject token: so host names are at most 60 characters. */
export const MAX_HOST_NAME = 60;
/** nats-server refuses a max_payload above its max_pending (64 MiB by default). */
const MAX_PAYLOAD_BYTES = 64 * 1024 * 1024;
/** bcrypt reads only the first 72 bytes of a password. */
const MAX_PASSWORD_BYTES = 72;

/** The NATS user of a host's connection that serves requests. */
export function hostRpcUser(host: string): string {
  return `${host}-rpc`;
}

/**
 * The worker protocol's requests: published by workers to one host's own subjects
 * (`<prefix>.agent.host.<host>.<method>`), each served only by that host's rpc user.
 */
const WORKER_REQUESTS = [
  "claim",
  "context",
  "append",
  "heartbeat",
  "turn.end",
  "tools.execute",
  "body.part",
  "delta",
] as const satisfies ReadonlyArray<AgentMethod>;
// A worker method added to the contract without a permission here does not compile.
const _everyWorkerMethod: [Exclude<AgentMethod, (typeof WORKER_REQUESTS)[number]>] extends [never]
  ? true
  : never = true;

// ---------------------------------------------------------------------------------------------
// Reading the team file

function bool(fail: Fail, at: string, v: unknown): boolean {
  if (typeof v !== "boolean") fail(at, `expected true or false, got ${show(v)}`);
  return v;
}

/** An absolute file path; it is written quoted, so only printable characters. */
function filePath(fail: Fail, at: string, v: unknown): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
  if (typeof v !== "string" || !v.startsWith("/") || /[\u0000-\u001f\u007f]/.test(v))
    fail(at, `expected an absolute file path, got ${show(v)}`);
  return v;
}

const SIZE = /^(\d+)(K|KB|M|MB|G|GB)?$/i;
const SIZE_FACTOR: Record<string, number> = {
  K: 1e3,
  KB: 1024,
  M: 1e6,
  MB: 1024 ** 2,
  G: 1e9,
  GB: 1024 ** 3,
};

/** A size as nats-server reads it; returns the normalised form and its bytes. */
function size(fail: Fail, at: string, v: unknown): { value: number | string; bytes: number } {
  if (typeof v === "number" && Number.isSafeInteger(v) && v > 0) return { value: v, bytes: v };
  const m = typeof v === "string" ? SIZE.exec(v.trim()) : null;
  if (!m || Number(m[1]) === 0)
    fail(at, `${show(v)} is not a size (a byte count, or a number with K, KB, M, MB, G or GB: 8MB)`);
  const unit = (m[2] ?? "").toUpperCase();
  const bytes = Number(m[1]) * (SIZE_FACTOR[unit] ?? 1);
  return { value: unit ? `${m[1]}${unit}` : bytes, bytes };
}

interface Address {
  host: string | null;
  port: number;
}

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;
const HOSTNAME =
  /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/;
const IPV6 = /^\[[0-9A-Fa-f:.]+\]$/;

/** `host:port` (IPv4, a host name or `[IPv6]`) or a port alone. */
function parseAddress(text: string): Address | null {
  const portOf = (s: string) => (/^\d{1,5}$/.test(s) && Number(s) >= 1 && Number(s) <= 65535 ? Number(s) : 0);
  if (/^\d+$/.test(text)) {
    const port = portOf(text);
    return port ? { host: null, port } : null;
  }
  const colon = text.lastIndexOf(":");
  if (colon <= 0) return null;
  const host = text.slice(0, colon);
  const port = portOf(text.slice(colon + 1));
  if (!port) return null;
  const v4 = IPV4.exec(host);
  if (v4 ? v4.slice(1).every((o) => Number(o) <= 255) : HOSTNAME.test(host) || IPV6.test(host))
    return { host, port };
  return null;
}

function address(fail: Fail, at: string, v: unknown): string {
  const text = typeof v === "number" ? String(v) : v;
  const a = typeof text === "string" ? parseAddress(text) : null;
  if (!a) fail(at, `${show(v)} is not host:port or a port (1-65535)`);
  return text as string;
}

function isLoopback(listen: string): boolean {
  const host = parseAddress(listen)?.host;
  return host === "localhost" || host === "[::1]" || (host?.startsWith("127.") ?? false);
}

function origin(fail: Fail, at: string, v: unknown): string {
  let url: URL | null = null;
  try {
    url = typeof v === "string" ? new URL(v) : null;
  } catch {}
  if (!url || (url.protocol !== "http:" && url.protocol !== "https:"))
    fail(at, `${show(v)} is not an http(s) origin such as https://pi.example.com`);
  if (url.origin !== v)
    fail(at, `${show(v)} is not an origin (scheme://host[:port], no path): write ${show(url.origin)}`);
  return v;
}

const TOP_KEYS = [
  "prefix",
  "listen",
  "maxPayload",
  "jetstream",
  "hosts",
  "workers",
  "plugins",
  "people",
  "tls",
  "websocket",
] as const;

/**
 * Reads a team file. Refuses (UsageError naming the key and value) anything that is not YAML, an
 * unknown key anywhere, a name or plugin id that is not a subject token, a host name over 60
 * characters, a name used twice across all roles (including each host's `<host>-rpc`), an
 * allowed origin with a path, and a websocket without TLS that listens beyond loopback.
 */
export function parseTeam(text: string, source = "team.yaml"): Team {
  const fail: Fail = (at, message) => {
    throw new UsageError(`${source}: ${at ? `${at}: ` : ""}${message}`);
  };
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: false });
  const yamlError = doc.errors[0];
  if (yamlError) fail("", `not valid YAML: ${yamlError.message}`);
  const top = mapping(fail, "", doc.toJS({ maxAliasCount: 100 }), TOP_KEYS);

  const prefix = top.prefix ?? DEFAULT_PREFIX;
  if (typeof prefix !== "string" || !PREFIX_TOKEN.test(prefix))
    fail("prefix", `${show(prefix)} is not a valid prefix (1 to 32 of A-Z a-z 0-9 _ -)`);
  // `_INBOX_alice.evt.>` would be inside alice's inbox: she could read everyone's events.
  if (prefix.startsWith("_INBOX")) fail("prefix", `${show(prefix)} would overlap the users' reply inboxes`);

  const listen = address(fail, "listen", top.listen ?? DEFAULT_LISTEN);
  const maxPayload = size(fail, "maxPayload", top.maxPayload ?? DEFAULT_MAX_PAYLOAD);
  if (maxPayload.bytes > MAX_PAYLOAD_BYTES)
    fail("maxPayload", `${show(top.maxPayload)} is more than nats-server allows (64MB)`);

  const js = mapping(fail, "jetstream", top.jetstream ?? {}, ["storeDir", "maxMemoryStore", "maxFileStore"]);
  const jetstream: Team["jetstream"] = {
    maxMemoryStore: size(fail, "jetstream.maxMemoryStore", js.maxMemoryStore ?? "256MB").value,
    maxFileStore: size(fail, "jetstream.maxFileStore", js.maxFileStore ?? "10GB").value,
  };
  if (js.storeDir !== undefined) jetstream.storeDir = filePath(fail, "jetstream.storeDir", js.storeDir);

  // Every user name, in the order met, with what it is, so a second use names the first.
  const names = new Map<string, string>();
  const claim = (at: string, name: string, what: string) => {
    const first = names.get(name);
    if (first !== undefined) fail(at, `${show(name)} is also ${first}`);
    names.set(name, `${what} (${at})`);
  };

  const hostList = list(fail, "hosts", top.hosts);
  if (hostList.length === 0) fail("hosts", "at least one host is needed");
  const hosts = hostList.map((v, i) => {
    const at = `hosts[${i}]`;
    const name = token(fail, at, v, "host name");
    if (name.length > MAX_HOST_NAME)
      fail(at, `${show(name)} is longer than ${MAX_HOST_NAME} characters (its rpc user adds "-rpc")`);
    claim(at, name, "a host name");
    claim(at, hostRpcUser(name), `the rpc user of host ${show(name)}`);
    return name;
  });

  const workers = list(fail, "workers", top.workers).map((v, i) => {
    const at = `workers[${i}]`;
    const name = token(fail, at, v, "worker name");
    claim(at, name, "a worker name");
    return name;
  });

  const pluginIds = new Map<string, string>();
  const plugins = list(fail, "plugins", top.plugins).map((v, i) => {
    const at = `plugins[${i}]`;
    const p = mapping(fail, at, v, ["user", "id"]);
    const user = token(fail, `${at}.user`, p.user, "plugin user name");
    const id = token(fail, `${at}.id`, p.id, "plugin id");
    claim(`${at}.user`, user, "a plugin user");
    const first = pluginIds.get(id);
    if (first !== undefined) fail(`${at}.id`, `${show(id)} is also the id of ${first}`);
    pluginIds.set(id, at);
    return { user, id };
  });

  const people = list(fail, "people", top.people).map((v, i) => {
    const at = `people[${i}]`;
    if (typeof v === "string") {
      claim(at, token(fail, at, v, "person name"), "a person");
      return { name: v, admin: false };
    }
    const p = mapping(fail, at, v, ["name", "admin"]);
    const name = token(fail, `${at}.name`, p.name, "person name");
    claim(`${at}.name`, name, "a person");
    return { name, admin: p.admin === undefined ? false : bool(fail, `${at}.admin`, p.admin) };
  });

  const team: Team = {
    prefix,
    listen,
    maxPayload: maxPayload.value,
    jetstream,
    hosts,
    workers,
    plugins,
    people,
  };

  if (top.tls !== undefined) {
    const t = mapping(fail, "tls", top.tls, ["cert", "key", "ca", "verify"]);
    team.tls = { cert: filePath(fail, "tls.cert", t.cert), key: filePath(fail, "tls.key", t.key) };
    if (t.ca !== undefined) team.tls.ca = filePath(fail, "tls.ca", t.ca);
    if (t.verify !== undefined) team.tls.verify = bool(fail, "tls.verify", t.verify);
  }

  if (top.websocket !== undefined) {
    const w = mapping(fail, "websocket", top.websocket, ["listen", "allowedOrigins", "tls", "noTls"]);
    const wsListen = address(fail, "websocket.listen", w.listen);
    const origins = list(fail, "websocket.allowedOrigins", w.allowedOrigins);
    if (origins.length === 0)
      fail("websocket.allowedOrigins", "at least one origin is needed (the web pages that may connect)");
    team.websocket = {
      listen: wsListen,
      allowedOrigins: origins.map((o, i) => origin(fail, `websocket.allowedOrigins[${i}]`, o)),
    };
    const noTls = w.noTls === undefined ? false : bool(fail, "websocket.noTls", w.noTls);
    if (noTls && w.tls !== undefined) fail("websocket.noTls", "give either tls or noTls: true, not both");
    if (noTls) {
      if (!isLoopback(wsListen))
        fail(
          "websocket.noTls",
          `allowed only when websocket.listen is a loopback address, not ${show(w.listen)}`,
        );
      team.websocket.noTls = true;
    } else {
      if (w.tls === undefined) fail("websocket.tls", "needed (or noTls: true on a loopback listen)");
      const t = mapping(fail, "websocket.tls", w.tls, ["cert", "key"]);
      team.websocket.tls = {
        cert: filePath(fail, "websocket.tls.cert", t.cert),
        key: filePath(fail, "websocket.tls.key", t.key),
      };
    }
  }
  return team;
}

/** Reads a secrets file; refuses anything but `{version: 1, users: {name: password}}`. */
export function parseSecrets(text: string, source = "secrets.json"): Secrets {
  const fail = (message: string): never => {
    throw new UsageError(`${source}: ${message}`);
  };
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (cause) {
    fail(`not JSON: ${(cause as Error).message}`);
  }
  if (!isMapping(v) || v.version !== 1 || !isMapping(v.users) || Object.keys(v).length !== 2)
    fail('expected {"version": 1, "users": {"<user>": "<password>", ...}}');
  const users = (v as { users: Record<string, unknown> }).users;
  for (const [name, pass] of Object.entries(users)) {
    if (typeof pass !== "string" || pass.length === 0 || Buffer.byteLength(pass) > MAX_PASSWORD_BYTES)
      fail(`users.${name}: the password must be a string of 1 to ${MAX_PASSWORD_BYTES} bytes`);
  }
  return { version: 1, users: users as Record<string, string> };
}

// ---------------------------------------------------------------------------------------------
// Who may do what

/** Every NATS user of the team with its permissions, hosts first, then workers, plugins, people. */
export function natsUsers(team: Team): NatsUser[] {
  const P = team.prefix;
  const users: NatsUser[] = [];
  const agent = (name: "offer" | "hello" | "rollcall") => agentSubject(P, name);
  const inboxes = [...team.people.map((p) => p.name), ...team.workers].map((x) => `${inboxPrefix(x)}.>`);
  for (const host of team.hosts) {
    users.push({
      name: host,
      role: "host",
      publish: {
        allow: [
          eventWildcard(P),
          `${P}.live.>`,
          agent("offer"),
          agent("rollcall"),
          `${P}.agent.cancel.>`,
          `${P}.plugin.>`,
          // Host to host (forwarded requests and their answers, docs/protocol.md "Several hosts"): hosts only.
          hostWildcard(P),
        ],
      },
      subscribe: [`${inboxPrefix(host)}.>`, hostWildcard(P)],
    });
    users.push({
      name: hostRpcUser(host),
      role: "host-rpc",
      // Replies to people and workers, nothing else: no host-to-host subject, so no request (a `$SRV`
      // one with a crafted reply subject included) can make it publish anywhere but an inbox.
      publish: { allow: inboxes },
      subscribe: [
        rpcWildcard(P),
        workerHostWildcard(P, host),
        agent("hello"),
        workerGoodbyeWildcard(P),
        "$SRV.>",
      ],
    });
  }
  for (const w of team.workers) {
    users.push({
      name: w,
      role: "worker",
      publish: {
        allow: [
          ...WORKER_REQUESTS.map((m) => workerAnyHostSubject(P, m)),
          agent("hello"),
          workerGoodbyeSubject(P, w),
        ],
      },
      // `subject queue`: the offer only as a member of the queue group `workers`.
      subscribe: [
        `${agent("offer")} ${WORKER_QUEUE}`,
        agent("rollcall"),
        workerCancelWildcard(P, w),
        `${inboxPrefix(w)}.>`,
      ],
    });
  }
  for (const p of team.plugins) {
    users.push({
      name: p.user,
      role: "plugin",
      publish: { deny: [">"] },
      subscribe: [`${P}.plugin.${p.id}.>`],
      allowResponses: true,
    });
  }
  for (const p of team.people) {
    users.push({
      name: p.name,
      role: p.admin ? "admin" : "person",
      publish: { allow: [rpcSubject(P, p.name, ">"), ...(p.admin ? ["$SRV.>"] : [])] },
      subscribe: [`${P}.evt.${p.name}.>`, `${P}.live.${p.name}.>`, `${inboxPrefix(p.name)}.>`],
    });
  }
  return users;
}

// ---------------------------------------------------------------------------------------------
// Writing the configuration

/** A double-quoted nats-server config string (its escapes are the JSON ones for these characters). */
const q = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
const qList = (xs: string[]) => `[${xs.map(q).join(", ")}]`;
/** A port alone is an integer to nats-server; host:port a string. */
const listenValue = (l: string) => (/^\d+$/.test(l) ? l : q(l));

const ROLE_NOTE: Record<NatsRole, string> = {
  host: "host: publishes events, offers, cancels, plugin calls, host-to-host forwarding",
  "host-rpc": "host rpc: serves requests, replies only into people's and workers' inboxes",
  worker: "worker",
  plugin: "plugin",
  person: "person",
  admin: "person, admin ($SRV)",
};

function header(team: Team): string[] {
  const P = team.prefix;
  return [
    "# Generated by `pihost nats-config --users <team file>`: do not edit by hand. Change the team",
    "# file and run the command again; it keeps every existing password (from the secrets file) and",
    "# this file holds only their bcrypt hashes. Each connection must use its user's inbox prefix",
    "# (client option inboxPrefix `_INBOX_<user>`); there is no shared `_INBOX.>` and no no_auth_user.",
    "#",
    `# Rules (prefix ${P}):`,
    `# - person N: publish ${P}.rpc.N.> (admins also $SRV.>); subscribe ${P}.evt.N.>, ${P}.live.N.>, _INBOX_N.>.`,
    `# - worker W: publish ${P}.agent.host.*.{${WORKER_REQUESTS.join(",")}} (to the host that owns the turn),`,
    `#   ${P}.agent.hello, ${P}.agent.goodbye.W;`,
    `#   subscribe ${P}.agent.offer in queue group workers only, ${P}.agent.rollcall, ${P}.agent.cancel.W.>, _INBOX_W.>.`,
    `# - plugin user with id I: subscribe ${P}.plugin.I.>; publishes nothing but one reply to each`,
    "#   request it received (allow_responses, within nats-server's default 2 minutes).",
    `# - host H: publish ${P}.evt.>, ${P}.live.>, ${P}.agent.offer, ${P}.agent.rollcall, ${P}.agent.cancel.>,`,
    `#   ${P}.plugin.>, ${P}.host.> (host to host); no JetStream: events are kept in Postgres;`,
    `#   subscribe _INBOX_H.>, ${P}.host.>.`,
    `# - host rpc user H-rpc: subscribe ${P}.rpc.>, ${P}.agent.host.H.>, ${P}.agent.hello, ${P}.agent.goodbye.*,`,
    "#   $SRV.>; publish only _INBOX_x.> of every person and worker x (no JetStream, no events, no",
    "#   cancels, nothing host to host).",
    "",
  ];
}

function tlsBlock(indent: string, t: { cert: string; key: string; ca?: string; verify?: boolean }): string[] {
  const lines = [`${indent}tls {`, `${indent}  cert_file: ${q(t.cert)}`, `${indent}  key_file: ${q(t.key)}`];
  if (t.ca !== undefined) lines.push(`${indent}  ca_file: ${q(t.ca)}`);
  if (t.verify !== undefined) lines.push(`${indent}  verify: ${t.verify}`);
  lines.push(`${indent}}`);
  return lines;
}

/** `key: { allow: [...] }`, one subject a line when it would not fit on one. */
function subjects(indent: string, key: string, kind: "allow" | "deny", xs: string[]): string[] {
  const oneLine = `${indent}${key}: { ${kind}: ${qList(xs)} }`;
  if (oneLine.length <= 100) return [oneLine];
  return [`${indent}${key}: { ${kind}: [`, ...xs.map((x) => `${indent}  ${q(x)}`), `${indent}] }`];
}

function userBlock(u: NatsUser, hash: string): string[] {
  const publish =
    "allow" in u.publish
      ? subjects("        ", "publish", "allow", u.publish.allow)
      : subjects("        ", "publish", "deny", u.publish.deny);
  return [
    `    # ${ROLE_NOTE[u.role]}`,
    "    {",
    `      user: ${q(u.name)}`,
    `      password: ${q(hash)}`,
    "      permissions: {",
    ...publish,
    ...subjects("        ", "subscribe", "allow", u.subscribe),
    ...(u.allowResponses ? ["        allow_responses: true"] : []),
    "      }",
    "    }",
  ];
}

/**
 * The nats-server configuration of a team and the secrets that go with it. Users still in the team
 * keep their password from `secrets`; new users get a random one; users no longer in the team are
 * dropped (`removed`). Passwords appear in `config` only as bcrypt hashes.
 */
export function generateNatsConfig(
  team: Team,
  opts: { secrets?: Secrets; bcryptCost?: number; randomPassword?: () => string } = {},
): { config: string; secrets: Secrets; created: string[]; kept: string[]; removed: string[] } {
  const cost = opts.bcryptCost ?? DEFAULT_BCRYPT_COST;
  if (!Number.isInteger(cost) || cost < MIN_BCRYPT_COST || cost > 31)
    throw new UsageError(`the bcrypt cost must be a whole number from ${MIN_BCRYPT_COST} to 31, got ${cost}`);
  const random = opts.randomPassword ?? (() => randomBytes(24).toString("base64url"));
  const old = opts.secrets?.users ?? {};
  const users = natsUsers(team);
  // No prototype: a user may be called `__proto__` (a subject token like any other).
  const secrets: Secrets = { version: 1, users: Object.create(null) };
  const created: string[] = [];
  const kept: string[] = [];
  const blocks: string[] = [];
  for (const u of users) {
    const existing = Object.hasOwn(old, u.name) ? old[u.name] : undefined;
    const password = existing ?? random();
    (existing === undefined ? created : kept).push(u.name);
    secrets.users[u.name] = password;
    blocks.push(...userBlock(u, bcrypt.hashSync(password, cost)));
  }
  const removed = Object.keys(old).filter((name) => !Object.hasOwn(secrets.users, name));

  const lines = [
    ...header(team),
    `listen: ${listenValue(team.listen)}`,
    `max_payload: ${team.maxPayload}`,
    "",
  ];
  lines.push("jetstream {");
  if (team.jetstream.storeDir !== undefined) lines.push(`  store_dir: ${q(team.jetstream.storeDir)}`);
  lines.push(`  max_memory_store: ${team.jetstream.maxMemoryStore}`);
  lines.push(`  max_file_store: ${team.jetstream.maxFileStore}`, "}", "");
  if (team.tls) lines.push(...tlsBlock("", team.tls), "");
  if (team.websocket) {
    const w = team.websocket;
    lines.push("websocket {", `  listen: ${listenValue(w.listen)}`);
    lines.push(`  allowed_origins: ${qList(w.allowedOrigins)}`);
    if (w.tls) lines.push(...tlsBlock("  ", w.tls));
    else lines.push("  no_tls: true");
    lines.push("}", "");
  }
  lines.push("authorization {", "  users = [", ...blocks, "  ]", "}", "");
  return { config: lines.join("\n"), secrets, created, kept, removed };
}
