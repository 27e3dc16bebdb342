// The production NATS configuration from one team file (read by nats-team.ts): who may publish and
// subscribe what, one NATS user per host connection, worker, plugin and person. Pure apart from
// randomness and bcrypt: reading and writing files is the `pihost nats-config` command's job.
import { randomBytes } from "node:crypto";
import bcrypt from "bcryptjs";
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
import { UsageError } from "./cli-error.ts";

import { DEFAULT_BCRYPT_COST, hostRpcUser, MIN_BCRYPT_COST, type Secrets, type Team } from "./nats-team.ts";

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
