// The team file and the secrets file of the production NATS configuration (docs/operations.md "A
// team's NATS: from `team.yaml` to a running server"): read, checked and normalised, every refusal
// naming the field. Generating the configuration from them is nats-config.ts.
import { parseDocument } from "yaml";
import { PREFIX_TOKEN } from "../protocol/tokens.ts";
import { UsageError } from "./cli-error.ts";
import { type Fail, isMapping, list, mapping, show, token } from "../runtime/config-fields.ts";

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

  const prefix = teamPrefix(fail, top.prefix ?? DEFAULT_PREFIX);
  const listen = address(fail, "listen", top.listen ?? DEFAULT_LISTEN);
  const maxPayload = size(fail, "maxPayload", top.maxPayload ?? DEFAULT_MAX_PAYLOAD);
  if (maxPayload.bytes > MAX_PAYLOAD_BYTES)
    fail("maxPayload", `${show(top.maxPayload)} is more than nats-server allows (64MB)`);
  const jetstream = teamJetstream(fail, top.jetstream ?? {});

  const claim = nameClaims(fail);
  const team: Team = {
    prefix,
    listen,
    maxPayload: maxPayload.value,
    jetstream,
    hosts: teamHosts(fail, claim, top.hosts),
    workers: teamWorkers(fail, claim, top.workers),
    plugins: teamPlugins(fail, claim, top.plugins),
    people: teamPeople(fail, claim, top.people),
  };
  if (top.tls !== undefined) team.tls = teamTls(fail, top.tls);
  if (top.websocket !== undefined) team.websocket = teamWebsocket(fail, top.websocket);
  return team;
}

function teamPrefix(fail: Fail, prefix: unknown): string {
  if (typeof prefix !== "string" || !PREFIX_TOKEN.test(prefix))
    fail("prefix", `${show(prefix)} is not a valid prefix (1 to 32 of A-Z a-z 0-9 _ -)`);
  // `_INBOX_alice.evt.>` would be inside alice's inbox: she could read everyone's events.
  if (prefix.startsWith("_INBOX")) fail("prefix", `${show(prefix)} would overlap the users' reply inboxes`);
  return prefix;
}

function teamJetstream(fail: Fail, v: unknown): Team["jetstream"] {
  const js = mapping(fail, "jetstream", v, ["storeDir", "maxMemoryStore", "maxFileStore"]);
  const jetstream: Team["jetstream"] = {
    maxMemoryStore: size(fail, "jetstream.maxMemoryStore", js.maxMemoryStore ?? "256MB").value,
    maxFileStore: size(fail, "jetstream.maxFileStore", js.maxFileStore ?? "10GB").value,
  };
  if (js.storeDir !== undefined) jetstream.storeDir = filePath(fail, "jetstream.storeDir", js.storeDir);
  return jetstream;
}

/** Takes a user name for `what` at `at`; refuses a name already taken (by any role). */
type Claim = (at: string, name: string, what: string) => void;

function nameClaims(fail: Fail): Claim {
  // Every user name, in the order met, with what it is, so a second use names the first.
  const names = new Map<string, string>();
  return (at, name, what) => {
    const first = names.get(name);
    if (first !== undefined) fail(at, `${show(name)} is also ${first}`);
    names.set(name, `${what} (${at})`);
  };
}

function teamHosts(fail: Fail, claim: Claim, v: unknown): string[] {
  const hostList = list(fail, "hosts", v);
  if (hostList.length === 0) fail("hosts", "at least one host is needed");
  return hostList.map((v, i) => {
    const at = `hosts[${i}]`;
    const name = token(fail, at, v, "host name");
    if (name.length > MAX_HOST_NAME)
      fail(at, `${show(name)} is longer than ${MAX_HOST_NAME} characters (its rpc user adds "-rpc")`);
    claim(at, name, "a host name");
    claim(at, hostRpcUser(name), `the rpc user of host ${show(name)}`);
    return name;
  });
}

function teamWorkers(fail: Fail, claim: Claim, v: unknown): string[] {
  return list(fail, "workers", v).map((v, i) => {
    const at = `workers[${i}]`;
    const name = token(fail, at, v, "worker name");
    claim(at, name, "a worker name");
    return name;
  });
}

function teamPlugins(fail: Fail, claim: Claim, v: unknown): Team["plugins"] {
  const pluginIds = new Map<string, string>();
  return list(fail, "plugins", v).map((v, i) => {
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
}

function teamPeople(fail: Fail, claim: Claim, v: unknown): Team["people"] {
  return list(fail, "people", v).map((v, i) => {
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
}

function teamTls(fail: Fail, v: unknown): NonNullable<Team["tls"]> {
  const t = mapping(fail, "tls", v, ["cert", "key", "ca", "verify"]);
  const tls: NonNullable<Team["tls"]> = {
    cert: filePath(fail, "tls.cert", t.cert),
    key: filePath(fail, "tls.key", t.key),
  };
  if (t.ca !== undefined) tls.ca = filePath(fail, "tls.ca", t.ca);
  if (t.verify !== undefined) tls.verify = bool(fail, "tls.verify", t.verify);
  return tls;
}

function teamWebsocket(fail: Fail, v: unknown): NonNullable<Team["websocket"]> {
  const w = mapping(fail, "websocket", v, ["listen", "allowedOrigins", "tls", "noTls"]);
  const wsListen = address(fail, "websocket.listen", w.listen);
  const origins = list(fail, "websocket.allowedOrigins", w.allowedOrigins);
  if (origins.length === 0)
    fail("websocket.allowedOrigins", "at least one origin is needed (the web pages that may connect)");
  const websocket: NonNullable<Team["websocket"]> = {
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
    websocket.noTls = true;
  } else {
    if (w.tls === undefined) fail("websocket.tls", "needed (or noTls: true on a loopback listen)");
    const t = mapping(fail, "websocket.tls", w.tls, ["cert", "key"]);
    websocket.tls = {
      cert: filePath(fail, "websocket.tls.cert", t.cert),
      key: filePath(fail, "websocket.tls.key", t.key),
    };
  }
  return websocket;
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

/** The NATS user of a host's connection that serves requests. */
export function hostRpcUser(host: string): string {
  return `${host}-rpc`;
}
