// A running nats-server with the generated configuration: each role can do exactly what its
// permissions say, as the attack where it is one (helpers: nats-config.test-support.ts).
import { type ChildProcess, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import path from "node:path";
import { connect, type NatsConnection, PermissionViolationError } from "@nats-io/transport-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inboxPrefix } from "../protocol/subjects.ts";
import { generateNatsConfig } from "./nats-config.ts";
import { hostRpcUser, parseTeam, type Secrets } from "./nats-team.ts";

import {
  COST,
  collect,
  freeLoopbackPort,
  removeTempDirs,
  settle,
  TEAM,
  tempDir,
} from "./nats-config.test-support.ts";

afterAll(removeTempDirs);

interface User {
  nc: NatsConnection;
  /** Server errors (`-ERR`) seen as status events: publish permission violations land here. */
  errors: Error[];
}

describe("a running nats-server with the generated configuration", () => {
  let url = "";
  let secrets: Secrets;
  let child: ChildProcess;
  const users: NatsConnection[] = [];
  const P = "tp";

  beforeAll(async () => {
    const dir = await tempDir();
    const port = await freeLoopbackPort();
    url = `nats://127.0.0.1:${port}`;
    const r = generateNatsConfig(parseTeam(TEAM(`127.0.0.1:${port}`, dir)), { bcryptCost: COST });
    secrets = r.secrets;
    const file = path.join(dir, "nats.conf");
    await writeFile(file, r.config);
    child = spawn("nats-server", ["-c", file], { stdio: "ignore" });
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const nc = await connect({ servers: url, reconnect: false, user: "h1", pass: secrets.users.h1 });
        await nc.close();
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((res) => setTimeout(res, 50));
      }
    }
  });

  afterAll(async () => {
    for (const nc of users.splice(0)) await nc.close();
    if (child && child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    }
  });

  async function as(name: string): Promise<User> {
    const nc = await connect({
      servers: url,
      reconnect: false,
      user: name,
      pass: secrets.users[name],
      inboxPrefix: inboxPrefix(name),
    });
    users.push(nc);
    const errors: Error[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === "error") errors.push(s.error);
    })();
    return { nc, errors };
  }

  /** Subscribes, then refused (the server's -ERR reached the subscription) or allowed. */
  async function subscribeOutcome(u: User, subject: string, queue?: string) {
    let refused = false;
    const sub = u.nc.subscribe(subject, {
      ...(queue ? { queue } : {}),
      callback: (err) => {
        if (err instanceof PermissionViolationError && err.operation === "subscription") refused = true;
      },
    });
    await u.nc.flush();
    if (!refused) sub.unsubscribe();
    return refused ? "refused" : "allowed";
  }

  /** Publishes, then refused (a permission-violation status event named the subject) or not. */
  async function publishOutcome(u: User, subject: string) {
    const before = u.errors.length;
    u.nc.publish(subject, "x");
    await u.nc.flush();
    await settle();
    const refused = u.errors
      .slice(before)
      .some(
        (e) => e instanceof PermissionViolationError && e.operation === "publish" && e.subject === subject,
      );
    return refused ? "refused" : "sent";
  }

  /** The rpc user answering every request it may serve. */
  async function rpcResponder() {
    const rpc = await as(hostRpcUser("h1"));
    for (const s of [`${P}.rpc.>`, `${P}.agent.host.h1.claim`])
      rpc.nc.subscribe(s, {
        callback: (_e, m) => {
          m.respond(`served ${m.subject}`);
        },
      });
    await rpc.nc.flush();
    return rpc;
  }

  it("a person requests under their own name only and reads only their own inbox and events", async () => {
    const rpc = await rpcResponder();
    const seen = collect(rpc.nc, `${P}.rpc.bob.>`);
    const alice = await as("alice");
    expect((await alice.nc.request(`${P}.rpc.alice.x`, "hi", { timeout: 2000 })).string()).toBe(
      `served ${P}.rpc.alice.x`,
    );
    for (const s of ["_INBOX.>", "_INBOX_bob.>", ">", "$JS.API.>", `${P}.evt.bob.>`, `${P}.rpc.>`])
      expect([s, await subscribeOutcome(alice, s)]).toEqual([s, "refused"]);
    expect(await subscribeOutcome(alice, `${P}.evt.alice.>`)).toBe("allowed");
    for (const s of [`${P}.rpc.bob.x`, "$JS.API.INFO", "$SRV.PING", `${P}.evt.alice.s.t`])
      expect([s, await publishOutcome(alice, s)]).toEqual([s, "refused"]);
    await rpc.nc.flush();
    expect(seen.got).toEqual([]);
    seen.sub.unsubscribe();
  });

  it("an admin person may also reach the service endpoints ($SRV)", async () => {
    const root = await as("root");
    const bob = await as("bob");
    expect(await publishOutcome(root, "$SRV.PING")).toBe("sent");
    expect(await publishOutcome(bob, "$SRV.PING")).toBe("refused");
  });

  it("a worker takes offers only in the queue group and reads only its own cancels", async () => {
    const rpc = await rpcResponder();
    const w = await as("w");
    for (const [s, q] of [
      [`${P}.agent.>`, undefined],
      [`${P}.agent.cancel.w2.>`, undefined],
      [`${P}.agent.offer`, undefined],
      [`${P}.agent.offer`, "others"],
      [`${P}.evt.>`, undefined],
    ] as const)
      expect([s, q, await subscribeOutcome(w, s, q)]).toEqual([s, q, "refused"]);
    expect(await subscribeOutcome(w, `${P}.agent.cancel.w.>`)).toBe("allowed");

    const offers = collect(w.nc, `${P}.agent.offer`, { queue: "workers" });
    await w.nc.flush();
    const host = await as("h1");
    host.nc.publish(`${P}.agent.offer`, "turn");
    await host.nc.flush();
    await settle();
    expect(offers.got).toEqual([`${P}.agent.offer`]);
    offers.sub.unsubscribe();

    expect((await w.nc.request(`${P}.agent.host.h1.claim`, "c", { timeout: 2000 })).string()).toBe(
      `served ${P}.agent.host.h1.claim`,
    );
    // No shared worker request subject is left, and a worker says goodbye only for itself.
    for (const s of [
      `${P}.agent.offer`,
      `${P}.rpc.w.x`,
      `${P}.agent.cancel.w2.t`,
      `${P}.agent.claim`,
      `${P}.agent.tools.execute`,
      `${P}.agent.goodbye.w2`,
      `${P}.agent.host.h1.session.get`,
    ])
      expect([s, await publishOutcome(w, s)]).toEqual([s, "refused"]);
    for (const s of [`${P}.agent.hello`, `${P}.agent.goodbye.w`, `${P}.agent.host.h9.heartbeat`])
      expect([s, await publishOutcome(w, s)]).toEqual([s, "sent"]);
    // A host's serving user reads only its own worker subjects.
    expect(await subscribeOutcome(rpc, `${P}.agent.host.h9.>`)).toBe("refused");
  });

  it("a plugin answers a request on its subjects and can publish nothing else", async () => {
    const plug = await as("plug");
    expect(await subscribeOutcome(plug, `${P}.plugin.other.>`)).toBe("refused");
    plug.nc.subscribe(`${P}.plugin.lint.>`, {
      callback: (_e, m) => {
        m.respond("linted");
      },
    });
    await plug.nc.flush();
    const host = await as("h1");
    expect((await host.nc.request(`${P}.plugin.lint.run`, "x", { timeout: 2000 })).string()).toBe("linted");
    const alice = await as("alice");
    const evt = collect(alice.nc, `${P}.evt.alice.>`);
    await alice.nc.flush();
    for (const s of [`${P}.evt.x.y.z`, "$JS.API.INFO", `${P}.evt.alice.s.t`, `${inboxPrefix("h1")}.x`])
      expect([s, await publishOutcome(plug, s)]).toEqual([s, "refused"]);
    await alice.nc.flush();
    expect(evt.got).toEqual([]);
    evt.sub.unsubscribe();
  });

  it("the rpc user replies but cannot use JetStream, cancel a turn or publish an event; no host uses JetStream", async () => {
    const host = await as("h1");
    const w = await as("w");
    const cancels = collect(w.nc, `${P}.agent.cancel.w.>`);
    const alice = await as("alice");
    const evt = collect(alice.nc, `${P}.evt.alice.>`);
    await Promise.all([w.nc.flush(), alice.nc.flush()]);

    const rpc = await as(hostRpcUser("h1"));
    for (const s of ["$JS.API.STREAM.PURGE.X", `${P}.agent.cancel.w.t`, `${P}.evt.alice.s.t`])
      expect([s, await publishOutcome(rpc, s)]).toEqual([s, "refused"]);
    for (const s of ["$JS.API.>", `${P}.evt.>`, `_INBOX_h1.>`])
      expect([s, await subscribeOutcome(rpc, s)]).toEqual([s, "refused"]);
    // Events are kept in Postgres: the host's own user has no JetStream right either.
    for (const s of ["$JS.API.INFO", "$JS.API.STREAM.CREATE.PI_EVENTS"])
      expect([s, await publishOutcome(host, s)]).toEqual([s, "refused"]);
    await Promise.all([w.nc.flush(), alice.nc.flush()]);
    expect(cancels.got).toEqual([]);
    expect(evt.got).toEqual([]);

    // The observers do see what the host itself publishes.
    host.nc.publish(`${P}.agent.cancel.w.t`, "c");
    host.nc.publish(`${P}.evt.alice.s.t`, "e");
    await host.nc.flush();
    await settle();
    expect(cancels.got).toEqual([`${P}.agent.cancel.w.t`]);
    expect(evt.got).toEqual([`${P}.evt.alice.s.t`]);
    cancels.sub.unsubscribe();
    evt.sub.unsubscribe();
  });

  it("only a host's own user uses the host-to-host subjects: a forwarded request and its answer", async () => {
    const owner = await as("h1");
    owner.nc.subscribe(`${P}.host.fwd.h1`, {
      callback: (_e, m) => {
        m.respond(`owner got ${m.string()}`);
      },
    });
    await owner.nc.flush();
    for (const name of ["h1"]) {
      const forwarder = await as(name);
      const answer = await forwarder.nc.request(`${P}.host.fwd.h1`, name, {
        timeout: 2000,
        noMux: true,
        reply: `${P}.host.reply.h1.${name}`,
      });
      expect(answer.string()).toBe(`owner got ${name}`);
      expect(await subscribeOutcome(forwarder, `${P}.host.>`)).toBe("allowed");
    }
    const seen = collect(owner.nc, `${P}.host.>`);
    await owner.nc.flush();
    // The serving user is refused too: a request (a `$SRV` one with a crafted reply subject
    // included) can never make it publish host to host.
    for (const name of ["alice", "root", "w", "plug", hostRpcUser("h1")]) {
      const u = await as(name);
      for (const s of [`${P}.host.fwd.h1`, `${P}.host.reply.h1.x`])
        expect([name, s, await publishOutcome(u, s)]).toEqual([name, s, "refused"]);
      expect([name, await subscribeOutcome(u, `${P}.host.>`)]).toEqual([name, "refused"]);
    }
    await owner.nc.flush();
    expect(seen.got).toEqual([]);
    seen.sub.unsubscribe();
  });

  it("refuses a wrong password and a user that is not in the team", async () => {
    for (const [user, pass] of [
      ["alice", "wrong"],
      ["alice", secrets.users.bob],
      ["carol", "whatever"],
    ] as const) {
      await expect(connect({ servers: url, reconnect: false, user, pass })).rejects.toThrow(/Authorization/i);
    }
  });
});
