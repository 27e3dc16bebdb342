// The console's bus over a stand-in NATS connection: the person's inbox prefix and credentials,
// the two subscriptions, and after a reconnect a catch-up through events.since from the last cursor
// with duplicates dropped, then a re-read (events are hints).
import type { ConnectionOptions, NatsConnection, Status } from "@nats-io/nats-core";
import { describe, expect, it } from "vitest";
import { encodeJson } from "../../protocol/envelope.ts";
import { connectConsole, reasonOf } from "./bus.ts";
import type { ConnectionState } from "./stores.ts";

type Callback = (err: Error | null, msg: { subject: string; data: Uint8Array }) => void;

function fakeNats(answer: (subject: string, body: unknown) => unknown) {
  const subs: Array<{ subject: string; callback: Callback }> = [];
  const requests: Array<{ subject: string; body: unknown }> = [];
  const statuses: Status[] = [];
  let wake: (() => void) | null = null;
  let closedResolve: (e?: Error) => void = () => {};
  let closed = false;
  const nc = {
    subscribe(subject: string, opts: { callback: Callback }) {
      const s = { subject, callback: opts.callback };
      subs.push(s);
      return { unsubscribe: () => subs.splice(subs.indexOf(s), 1) };
    },
    async flush() {},
    async request(subject: string, data: Uint8Array) {
      const body = JSON.parse(new TextDecoder().decode(data));
      requests.push({ subject, body });
      return { data: encodeJson({ result: answer(subject, body) }) };
    },
    status() {
      return {
        async *[Symbol.asyncIterator]() {
          for (;;) {
            while (statuses.length > 0) yield statuses.shift()!;
            if (closed) return;
            await new Promise<void>((r) => {
              wake = r;
            });
          }
        },
      };
    },
    closed: () =>
      new Promise<Error | undefined>((r) => {
        closedResolve = r;
      }),
    isClosed: () => closed,
    async close() {
      closed = true;
      wake?.();
      closedResolve();
    },
  };
  return {
    nc: nc as unknown as NatsConnection,
    subs,
    requests,
    publish(subject: string, body: unknown) {
      const data = new TextEncoder().encode(JSON.stringify(body));
      for (const s of subs) {
        const pattern = new RegExp(
          `^${s.subject.replace(/\./g, "\\.").replace(/\*/g, "[^.]+").replace(/>/g, ".+")}$`,
        );
        if (pattern.test(subject)) s.callback(null, { subject, data });
      }
    },
    status(s: Status) {
      statuses.push(s);
      wake?.();
    },
  };
}

const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setTimeout(r, 0));
};

describe("connectConsole", () => {
  it("connects as the person, follows every session, catches up after a reconnect and re-reads", async () => {
    // Positions as the host writes them: 32 hex digits that compare as strings.
    const at = (n: number) => n.toString(16).padStart(32, "0");
    const stored = (seq: number, cursor: number) => ({
      type: "turn.started",
      sessionId: "s1",
      seq,
      cursor: at(cursor),
      at: "2026-01-01T10:00:00Z",
      turnId: `t${seq}`,
      kind: "prompt",
    });
    const fake = fakeNats((subject, body) => {
      if (subject === "pi.rpc.alice.events.since") {
        const after = (body as { after: string }).after;
        // At connect: the position to continue from after a reconnect (nothing is read from the past).
        if (after === "now") return { events: [], next: at(9), more: false };
        return after === at(9)
          ? { events: [stored(1, 10), stored(2, 11), stored(3, 12)], next: at(12), more: true }
          : { events: [stored(4, 13)], next: at(13), more: false };
      }
      throw new Error(subject);
    });
    let options: ConnectionOptions | null = null;
    const states: Array<[ConnectionState, string | null | undefined]> = [];
    const items: Array<{ type: string; seq?: number }> = [];
    let resyncs = 0;
    const bus = await connectConsole({
      wsUrl: "ws://127.0.0.1:1",
      prefix: "pi",
      user: "alice",
      pass: "secret",
      onState: (s, r) => states.push([s, r]),
      onItem: (i) => items.push(i as { type: string; seq?: number }),
      onResync: () => resyncs++,
      connect: async (o) => {
        options = o;
        return fake.nc;
      },
    });
    expect(options).toMatchObject({
      servers: "ws://127.0.0.1:1",
      user: "alice",
      pass: "secret",
      inboxPrefix: "_INBOX_alice",
    });
    expect(fake.subs.map((s) => s.subject)).toEqual(["pi.evt.alice.*.>", "pi.live.alice.*.delta"]);
    expect(states.map(([s]) => s)).toEqual(["connecting", "connected"]);
    expect(resyncs).toBe(1);

    // A live event, a live delta, someone else's event (dropped).
    fake.publish("pi.evt.alice.s1.turn.started", stored(1, 10));
    fake.publish("pi.live.alice.s1.delta", { turnId: "t1", chunks: [{ kind: "text", text: "hi" }] });
    fake.publish("pi.evt.bob.s9.turn.started", stored(1, 1));
    expect(items.map((i) => i.type)).toEqual(["turn.started", "delta"]);

    // Lost and back: catch up from the position read at connect (never a live event's cursor), page
    // by page; what came both ways (1 live before, 3 live during) is shown once.
    fake.status({ type: "disconnect", server: "x" });
    await settle();
    expect(states.at(-1)).toEqual(["reconnecting", "connection lost"]);
    fake.status({ type: "reconnect", server: "x" });
    await settle();
    fake.publish("pi.evt.alice.s1.turn.started", stored(3, 12));
    const since = fake.requests.filter((r) => r.subject === "pi.rpc.alice.events.since").map((r) => r.body);
    expect(since).toEqual([{ after: "now" }, { after: at(9), limit: 500 }, { after: at(12), limit: 500 }]);
    expect(items.filter((i) => i.type !== "delta").map((i) => i.seq)).toEqual([1, 2, 3, 4]);
    expect(states.slice(-2).map(([s]) => s)).toEqual(["catching-up", "connected"]);
    expect(resyncs).toBe(2);

    await bus.close();
    await settle();
    expect(states.at(-1)).toEqual(["disconnected", "signed out"]);
  });

  it("a refused connection says why and rejects", async () => {
    const states: Array<[ConnectionState, string | null | undefined]> = [];
    await expect(
      connectConsole({
        wsUrl: "ws://127.0.0.1:1",
        prefix: "pi",
        user: "alice",
        pass: "wrong",
        onState: (s, r) => states.push([s, r]),
        onItem: () => {},
        onResync: () => {},
        connect: async () => {
          throw new Error("Authorization Violation");
        },
      }),
    ).rejects.toThrow("Authorization Violation");
    expect(states).toEqual([
      ["connecting", undefined],
      ["disconnected", "Authorization Violation"],
    ]);
  });
});

describe("reasonOf", () => {
  it("says what a bare connection error means", () => {
    const bare = new Error("");
    bare.name = "ConnectionError";
    expect(reasonOf(bare)).toMatch(/^ConnectionError: the server refused the connection .* allowed_origins$/);
    expect(reasonOf(new Error("Authorization Violation"))).toBe("Authorization Violation");
  });
});
