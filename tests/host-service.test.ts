// The host as a NATS citizen: discoverable as the micro service `pi-host`, events kept in Postgres
// only (no JetStream stream: clients catch up with events.since), development mode explicit,
// production without NATS credentials refused at start.
import { jetstream, jetstreamManager } from "@nats-io/jetstream";
import { Svcm } from "@nats-io/services";
import { describe, expect, it } from "vitest";
import { eventStreamName, HOST_SERVICE_NAME, workerHostSubject } from "../services/protocol/subjects.ts";
import { hostEnv, spawnTs } from "./support/processes.ts";
import { addMembers, eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";

const stack = useStack("svc", { host: true });

describe("host service", () => {
  it("announces development mode and answers host.hello", async () => {
    expect(await stack.host!.waitForEvent("host.dev_mode")).toMatchObject({ level: "warn" });
    const hello = await stack.client("alice").call("host.hello", { protocolVersion: 1 });
    expect(hello).toMatchObject({ protocolVersion: 1, devMode: true });
  });

  it("is discoverable with standard NATS service tooling", async () => {
    const client = new Svcm(stack.nc).client();
    const infos = [];
    for await (const info of await client.info(HOST_SERVICE_NAME)) infos.push(info);
    const mine = infos.find((i) => i.metadata?.prefix === stack.env.prefix);
    expect(mine).toBeDefined();
    const subjects = mine!.endpoints.map((e) => e.subject);
    expect(subjects).toEqual(
      expect.arrayContaining([
        `${stack.env.prefix}.rpc.>`,
        workerHostSubject(stack.env.prefix, stack.agentClient.host, "tools.execute"),
      ]),
    );
    const pings = [];
    for await (const p of await client.ping(HOST_SERVICE_NAME, mine!.id)) pings.push(p);
    expect(pings).toHaveLength(1);
  });

  it("keeps session events in Postgres only: no JetStream stream, owner and approver get each one live", async () => {
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("svc");
    const project = await alice.call("projects.create", { name: "svc", workspaceRoot: ws });
    await addMembers(stack, project.id, ["bob"]);
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "plan",
      approvers: ["bob"],
    });
    const live = ["alice", "bob"].map((p) => stack.events(session.id, p));
    await alice.call("session.prompt", { sessionId: session.id, text: "hello" });
    // The owner and the approver each get their copy of the event, live and from the rows.
    for (const [i, principal] of ["alice", "bob"].entries()) {
      await live[i]!.waitFor((e) => e.type === "turn.started");
      const page = await stack.client(principal).call("events.since", { sessionId: session.id });
      expect(page.events.map((e) => e.type)).toContain("turn.started");
    }
    const jsm = await jetstreamManager(stack.nc);
    const names: string[] = [];
    for await (const n of jsm.streams.names()) names.push(n);
    expect(names).not.toContain(eventStreamName(stack.env.prefix));
  });

  it("even in development mode (no NATS permissions) answers no reply subject that is not an inbox", async () => {
    // The attack of issue #11 with nothing but the host's own rule in the way: host.hello with the
    // reply subject of a stream purge, of another person's event and of a worker's cancel.
    // A stream of an operator's on this NATS, the purge's target.
    const jsm = await jetstreamManager(stack.nc);
    const streamName = `${eventStreamName(stack.env.prefix)}_VICTIM`;
    await jsm.streams.add({
      name: streamName,
      subjects: [`${stack.env.prefix}.victim.>`],
      max_bytes: 1 << 20,
    });
    await jetstream(stack.nc).publish(`${stack.env.prefix}.victim.x`, new Uint8Array([1]));
    const before = (await jsm.streams.info(streamName)).state.messages;
    expect(before).toBe(1);
    const forged: string[] = [];
    const tap = stack.nc.subscribe(`${stack.env.prefix}.evt.bob.>`, {
      callback: (_e, m) => {
        forged.push(m.subject);
      },
    });
    const cancels = stack.nc.subscribe(`${stack.env.prefix}.agent.cancel.>`, {
      callback: (_e, m) => {
        forged.push(m.subject);
      },
    });
    await stack.nc.flush();
    const hello = new TextEncoder().encode(JSON.stringify({ protocolVersion: 1 }));
    for (const reply of [
      `$JS.API.STREAM.PURGE.${streamName}`,
      `${stack.env.prefix}.evt.bob.s1.plan.changed`,
      `${stack.env.prefix}.agent.cancel.w1.t1`,
    ])
      stack.nc.publish(`${stack.env.prefix}.rpc.mallory.host.hello`, hello, { reply });
    try {
      // A correct hello answers within milliseconds; the unanswered ones are checked after a while.
      await stack.nc.flush();
      await new Promise((r) => setTimeout(r, 500));
      expect(forged).toEqual([]);
      expect((await jsm.streams.info(streamName)).state.messages).toBe(before);
    } finally {
      tap.unsubscribe();
      cancels.unsubscribe();
      await jsm.streams.delete(streamName).catch(() => {});
    }
    await eventually(async () => {
      const r = await stack.db.pool.query(
        "SELECT count(*)::int AS n FROM audit_log WHERE action = 'bus.reply_refused' AND principal = 'mallory'",
      );
      return r.rows[0].n === 3;
    });
  });

  it("refuses to start without NATS credentials unless development mode is explicit", async () => {
    const env = { ...hostEnv(stack.env), PI_DEV_MODE: undefined };
    const p = spawnTs("services/host/main.ts", env);
    expect(await p.exited).not.toBe(0);
    expect(p.lines.join("\n")).toMatch(/PI_DEV_MODE=1/);
    expect(p.lines.join("\n")).not.toMatch(/host\.ready/);
  });
});
