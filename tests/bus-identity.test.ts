// Identity sealed on the bus (issue #11 clauses 1, 2, 3, 4; docs/security.md "The bus"), written as
// the attacks of a second person, a second worker and a second plugin on a nats-server that runs
// exactly what `pihost nats-config` generated for a team, with a production-mode host (no
// PI_DEV_MODE) using the generated host users and a real agent worker process using its own.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { connect, type NatsConnection, type Subscription } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateNatsConfig } from "../services/cli/nats-config.ts";
import { parseTeam, type Secrets } from "../services/cli/nats-team.ts";
import { decodeJson, encodeJson } from "../services/protocol/envelope.ts";
import type { SessionEvent } from "../services/protocol/events.ts";
import { agentClient, rpcClient } from "../services/protocol/rpc-client.ts";
import type { TurnAssignment, TurnOffer } from "../services/protocol/schemas.ts";
import {
  agentSubject,
  workerHostSubject,
  inboxPrefix,
  pluginSubject,
  sessionEventsWildcard,
  turnCancelSubject,
  WORKER_QUEUE,
} from "../services/protocol/subjects.ts";
import { readArtifact } from "./support/artifacts.ts";
import { hostEnv, type ManagedProcess, spawnTs } from "./support/processes.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { type PrivateNats, startPrivateNats } from "./support/test-nats.ts";
import { refusalCode } from "./support/worker-double.ts";
import { decodeEvent, isEvent } from "./support/events.ts";

const stack = useStack("busid");
let prefix: string;

/** The team's one host: its name in the team file is its PI_HOST_ID. */
const TEAM_HOST_ID = "host";
const TEAM = {
  hosts: [TEAM_HOST_ID],
  workers: ["wa", "wb", "wc"],
  plugins: [
    { user: "plug-a", id: "pa" },
    { user: "plug-b", id: "pb" },
  ],
  people: ["alice", "bob", "mallory"],
};

let nats: PrivateNats;
let secrets: Secrets;
let host: ManagedProcess;
const conns: NatsConnection[] = [];
const subs: Subscription[] = [];

async function as(user: string): Promise<NatsConnection> {
  const nc = await connect({
    servers: nats.url,
    user,
    pass: secrets.users[user],
    inboxPrefix: inboxPrefix(user),
    name: `bus-identity ${user}`,
    reconnect: false,
  });
  conns.push(nc);
  return nc;
}

/** Resolves with the error NATS closed the subscription with, or null if it is still open after a while. */
async function refusedBy(sub: Subscription, ms = 2_000): Promise<Error | null> {
  const closed = await Promise.race([
    sub.closed,
    new Promise<"open">((r) => setTimeout(() => r("open"), ms)),
  ]);
  return closed instanceof Error ? closed : null;
}

/** A subscription that records what it receives (and is closed at the end). */
function capture(nc: NatsConnection, subject: string, queue?: string) {
  const got: string[] = [];
  const sub = nc.subscribe(subject, {
    ...(queue ? { queue } : {}),
    callback: (err, msg) => {
      if (!err) got.push(msg.subject);
    },
  });
  subs.push(sub);
  return { sub, got };
}

const person = (nc: NatsConnection, principal: string) =>
  rpcClient({ nc, prefix, principal, timeoutMs: 10_000 });
const worker = (nc: NatsConnection) => agentClient({ nc, prefix, timeoutMs: 10_000 }).to(TEAM_HOST_ID);

async function auditRefusals(): Promise<Array<{ principal: string | null; reason: string; reply: string }>> {
  const r = await stack.db.pool.query(
    `SELECT principal, details->>'reason' AS reason, details->>'reply' AS reply
       FROM audit_log WHERE action = 'bus.reply_refused' ORDER BY id`,
  );
  return r.rows;
}

beforeAll(async () => {
  prefix = stack.env.prefix;
  const dir = path.join(stack.dir, "nats");
  mkdirSync(dir, { recursive: true });
  const team = parseTeam(JSON.stringify({ prefix, listen: "127.0.0.1:4222", maxPayload: "8MB", ...TEAM }));
  const out = await generateNatsConfig(team, { bcryptCost: 4 });
  secrets = out.secrets;
  const configFile = path.join(dir, "nats.conf");
  writeFileSync(configFile, out.config);
  nats = await startPrivateNats({ user: "alice", pass: secrets.users.alice! }, { configFile });

  const env: Record<string, string | undefined> = {
    ...hostEnv({ ...stack.env, natsUrl: nats.url }),
    NATS_USER: TEAM_HOST_ID,
    NATS_PASSWORD: secrets.users.host,
    PI_HOST_ID: TEAM_HOST_ID,
    PI_NATS_RPC_USER: "host-rpc",
    PI_NATS_RPC_PASSWORD: secrets.users["host-rpc"],
    PI_STREAM_MAX_BYTES: String(8 * 1024 * 1024),
    // Production mode: the scripted test model only because it is listed, and named as the default.
    PI_MODEL_PROVIDERS: "scripted",
    PI_DEFAULT_MODEL: "scripted/demo",
  };
  delete env.PI_DEV_MODE;
  delete env.PI_TEST_HOOKS;
  host = spawnTs("services/host/main.ts", env);
  await host.waitForEvent("host.ready", 30_000);
}, 60_000);

afterAll(async () => {
  for (const s of subs) if (!s.isClosed()) s.unsubscribe();
  for (const nc of conns) if (!nc.isClosed()) await nc.close();
  await host?.stop();
  await nats?.stop();
});

/** alice's project and a Plan session on it, prompted; `worker` claims the turn as itself. */
async function claimedPlanTurn(
  workerName: string,
): Promise<{ sessionId: string; a: TurnAssignment; w: NatsConnection }> {
  const alice = person(await as("alice"), "alice");
  const ws = stack.newWorkspace(`alice/ws-${Math.random().toString(36).slice(2, 8)}`);
  const project = await alice.call("projects.create", { name: "p", workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    mode: "plan",
    permissionMode: "ask",
  });
  const w = await as(workerName);
  const offers = w.subscribe(agentSubject(prefix, "offer"), { queue: WORKER_QUEUE });
  subs.push(offers);
  const { turnId } = await alice.call("session.prompt", {
    sessionId: session.id,
    text: "go",
  });
  for await (const m of offers) if ((decodeJson(m.data) as TurnOffer).turnId === turnId) break;
  offers.unsubscribe();
  const a = await worker(w).call("claim", { turnId, workerId: workerName });
  return { sessionId: session.id, a, w };
}

describe("replies go only to the caller (clause 1)", () => {
  it("a request whose reply subject is a JetStream purge, another person's event or a worker's cancel gets no reply, publishes nothing, and is audited", async () => {
    const { sessionId, a } = await claimedPlanTurn("wa");
    // No user of the team may use JetStream (the host keeps no stream): a purge is aimed at a name.
    const stream = "PI_EVENTS";

    const aliceNc = await as("alice");
    const aliceEvents = capture(aliceNc, sessionEventsWildcard(prefix, "alice", sessionId));
    const aliceInbox = capture(aliceNc, `${inboxPrefix("alice")}.>`);
    const wa = await as("wa");
    const cancels = capture(wa, turnCancelSubject(prefix, "wa", a.turnId));
    await Promise.all([aliceNc.flush(), wa.flush()]);

    const mallory = await as("mallory");
    const targets = [
      `$JS.API.STREAM.PURGE.${stream}`,
      `${prefix}.evt.alice.${sessionId}.plan.changed`,
      turnCancelSubject(prefix, "wa", a.turnId),
      `${inboxPrefix("alice")}.forged.1`,
    ];
    for (const reply of targets)
      mallory.publish(`${prefix}.rpc.mallory.host.hello`, encodeJson({ protocolVersion: 1 }), { reply });
    // A worker's request aimed at another worker's inbox: its claim is not served either.
    const wb = await as("wb");
    wb.publish(
      workerHostSubject(prefix, TEAM_HOST_ID, "heartbeat"),
      encodeJson({ turnId: a.turnId, token: a.token }),
      {
        reply: `${inboxPrefix("wb")}.x.1`,
      },
    );
    await Promise.all([mallory.flush(), wb.flush()]);

    const refusals = await eventually(async () => {
      const rows = await auditRefusals();
      return rows.length >= targets.length + 1 ? rows : null;
    });
    expect(refusals.map((r) => [r.principal, r.reason])).toEqual(
      expect.arrayContaining([
        ["mallory", "not_an_inbox"],
        ["mallory", "not_an_inbox"],
        ["mallory", "not_an_inbox"],
        ["mallory", "not_the_callers_inbox"],
        ["wa", "not_the_callers_inbox"],
      ]),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(aliceEvents.got).toEqual([]);
    expect(aliceInbox.got).toEqual([]);
    expect(cancels.got).toEqual([]);
    // The refused heartbeat did nothing either way, and the turn is still wa's.
    const hb = await worker(wa).call("heartbeat", { turnId: a.turnId, token: a.token });
    expect(hb.ok).toBe(true);
  });

  it("the connection that serves requests can publish nothing but replies into inboxes", async () => {
    const rpcHost = await as("host-rpc");
    const hostNc = await as("host");
    const errors: string[] = [];
    for (const nc of [rpcHost, hostNc])
      void (async () => {
        for await (const s of nc.status()) if (s.type === "error") errors.push(String(s.error));
      })();
    rpcHost.publish("$JS.API.STREAM.PURGE.PI_EVENTS");
    rpcHost.publish(turnCancelSubject(prefix, "wa", "t1"));
    rpcHost.publish(`${prefix}.evt.alice.s1.plan.changed`, encodeJson({}));
    rpcHost.publish(`${prefix}.host.fwd.host`, encodeJson({}));
    await rpcHost.flush();
    // Neither host user may use JetStream: the host keeps its events in Postgres alone.
    hostNc.publish("$JS.API.STREAM.LIST");
    await hostNc.flush();
    await eventually(async () => errors.length >= 5, 5_000, "five permission violations");
    expect(errors.join("\n")).toMatch(/Permissions Violation for Publish/i);
  });
});

describe("private inboxes and no JetStream for people (clauses 2 and 3)", () => {
  it("mallory's subscriptions on _INBOX.>, _INBOX.*.>, alice's prefix, > and $JS.API.> are refused and capture nothing while alice reads her plan", async () => {
    const { sessionId, a, w } = await claimedPlanTurn("wa");
    const mallory = await as("mallory");
    const taps = ["_INBOX.>", "_INBOX.*.>", `${inboxPrefix("alice")}.>`, ">", "$JS.API.>"].map((s) =>
      capture(mallory, s),
    );
    const submitted = await worker(w).call("tools.execute", {
      sessionId,
      turnId: a.turnId,
      token: a.token,
      toolCallId: "plan-1",
      tool: "ExitPlanMode",
      args: { title: "Secret plan", markdown: "# The secret plan\n", question: "ok?" },
      batch: [{ toolCallId: "plan-1", tool: "ExitPlanMode" }],
    });
    expect(submitted.isError).toBe(false);
    const alice = person(await as("alice"), "alice");
    const [proposal] = (await alice.call("plans.pending", { sessionId })).proposals;
    const artifact = await readArtifact(alice, proposal!.proposalId);
    expect(artifact.content).toBe("# The secret plan\n");
    for (const t of taps) {
      expect(await refusedBy(t.sub)).toBeInstanceOf(Error);
      expect(t.got).toEqual([]);
    }
    // No JetStream API for people at all, and no way to read another's events through the host.
    const js = capture(mallory, "$JS.API.INFO");
    expect(await refusedBy(js.sub)).toBeInstanceOf(Error);
    await expect(mallory.request("$JS.API.INFO", encodeJson({}), { timeout: 1_000 })).rejects.toThrow();
    const m = person(mallory, "mallory");
    expect(await refusalCode(m.call("events.since", { sessionId }))).toBe("FORBIDDEN");
    expect((await m.call("events.since", {})).events).toEqual([]);
    expect(await refusalCode(m.call("artifacts.read", { proposalId: proposal!.proposalId }))).toBe(
      "FORBIDDEN",
    );
    const session = await alice.call("session.get", { sessionId });
    expect(await refusalCode(m.call("projects.get", { projectId: session.projectId }))).toBe("FORBIDDEN");
    expect(await refusalCode(m.call("session.create", { projectId: session.projectId }))).toBe("FORBIDDEN");
    // mallory cannot speak as alice: the server refuses the publish, the host never sees it.
    await expect(
      mallory.request(`${prefix}.rpc.alice.session.list`, encodeJson({}), { timeout: 1_000 }),
    ).rejects.toThrow();
  });
});

describe("one NATS user per worker and per plugin (clause 4)", () => {
  it("worker wb cannot see or use wa's token, tool calls or cancels", async () => {
    const { sessionId, a } = await claimedPlanTurn("wa");
    const wb = await as("wb");
    const taps = [
      `${prefix}.agent.>`,
      workerHostSubject(prefix, TEAM_HOST_ID, "tools.execute"),
      `${inboxPrefix("wa")}.>`,
      `${prefix}.agent.cancel.wa.>`,
      agentSubject(prefix, "offer"),
    ].map((s) => capture(wb, s));
    for (const t of taps) expect(await refusedBy(t.sub)).toBeInstanceOf(Error);
    const b = worker(wb);
    expect(await refusalCode(b.call("claim", { turnId: a.turnId, workerId: "wb" }))).toBe(
      "TURN_NOT_CLAIMABLE",
    );
    expect(
      await refusalCode(
        b.call("tools.execute", {
          sessionId,
          turnId: a.turnId,
          token: "tok_guessed",
          toolCallId: "x",
          tool: "Glob",
          args: { pattern: "*" },
          batch: [{ toolCallId: "x", tool: "Glob" }],
        }),
      ),
    ).toBe("TURN_TOKEN_INVALID");
    // wb may not publish worker-only subjects it has no right to, nor any person's.
    await expect(
      wb.request(`${prefix}.rpc.alice.session.list`, encodeJson({}), { timeout: 1_000 }),
    ).rejects.toThrow();
    for (const t of taps) expect(t.got).toEqual([]);
  });

  it("plugin pb cannot read pa's calls; a plugin may only answer what it was asked", async () => {
    const pb = await as("plug-b");
    const tap = capture(pb, `${prefix}.plugin.pa.>`);
    expect(await refusedBy(tap.sub)).toBeInstanceOf(Error);
    const pa = await as("plug-a");
    const served = pa.subscribe(`${prefix}.plugin.pa.>`, {
      callback: (_e, msg) => {
        msg.respond(encodeJson({ result: { ok: true } }));
      },
    });
    subs.push(served);
    await pa.flush();
    const hostNc = await as("host");
    const reply = await hostNc.request(pluginSubject(prefix, "pa", "echo"), encodeJson({}), {
      timeout: 5_000,
    });
    expect(decodeJson(reply.data)).toEqual({ result: { ok: true } });
    const observer = capture(hostNc, `${prefix}.evt.>`);
    await hostNc.flush();
    pa.publish(`${prefix}.evt.alice.s1.plan.changed`, encodeJson({}));
    await pa.flush();
    await new Promise((r) => setTimeout(r, 300));
    expect(observer.got).toEqual([]);
  });
});

describe("a real worker and the CLI under the generated users", () => {
  it("the worker process runs a Plan turn end to end on its own inbox and the CLI says hello on alice's", async () => {
    const worker = spawnTs("services/agent/main.ts", {
      NATS_URL: nats.url,
      PI_PREFIX: prefix,
      NATS_USER: "wc",
      NATS_PASSWORD: secrets.users.wc,
    });
    try {
      await worker.waitForEvent("worker.ready", 30_000);
      const aliceNc = await as("alice");
      const alice = person(aliceNc, "alice");
      const ws = stack.newWorkspace("alice/real-worker");
      const project = await alice.call("projects.create", { name: "r", workspaceRoot: ws });
      const session = await alice.call("session.create", {
        projectId: project.id,
        mode: "plan",
        permissionMode: "auto",
      });
      const seen: SessionEvent[] = [];
      const sub = aliceNc.subscribe(sessionEventsWildcard(prefix, "alice", session.id), {
        callback: (_e, m) => {
          seen.push(decodeEvent(m.data));
        },
      });
      subs.push(sub);
      await aliceNc.flush();
      await alice.call("session.prompt", { sessionId: session.id, text: "Add a greeting file" });
      await eventually(
        async () => seen.some(isEvent("plan.changed", (e) => e.state === "awaiting_approval")),
        45_000,
        "the plan awaiting approval",
      );
      // A turn the host revokes reaches this worker on its own cancel subject.
      const waiting = await alice.call("session.create", {
        projectId: project.id,
        mode: "agent",
        permissionMode: "auto",
        model: {
          provider: "scripted",
          model: "wait",
          script: [{ waitForFile: path.join(ws, "never"), text: "x" }],
        },
      });
      const { turnId } = await alice.call("session.prompt", {
        sessionId: waiting.id,
        text: "wait",
      });
      await eventually(
        async () => worker.lines.some((l) => l.includes('"turn.started"') && l.includes(turnId)),
        20_000,
        "the worker running the turn",
      );
      await alice.call("session.abort", { sessionId: waiting.id });
      await eventually(
        async () => worker.lines.some((l) => l.includes("cancelled by the host") && l.includes(turnId)),
        10_000,
        "the worker told to cancel",
      );
      expect(worker.lines.join("\n")).not.toMatch(/Permissions Violation/i);
      const cli = spawnTs(
        "services/cli/main.ts",
        {
          NATS_URL: nats.url,
          PI_PREFIX: prefix,
          NATS_USER: "alice",
          NATS_PASSWORD: secrets.users.alice,
        },
        ["hello"],
      );
      expect(await cli.exited).toBe(0);
      expect(cli.lines.join("\n")).toMatch(/protocol 1/);
    } finally {
      await worker.stop();
    }
  }, 90_000);
});
