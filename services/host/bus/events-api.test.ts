// Replies follow their events (docs/protocol.md "Events"): a person's reply waits until the events
// its request raised have reached the server (the publisher's PING), a worker's only until they are
// stored and published; each request in its own scope, and the flush runs after a handler that threw.
import { describe, expect, it } from "vitest";
import { afterEvents } from "./events-api.ts";

function recordingPublisher() {
  const flushes: Array<{ reachServer?: boolean }> = [];
  let scopes = 0;
  return {
    flushes,
    scopes: () => scopes,
    publisher: {
      scoped: <T>(work: () => Promise<T>) => {
        scopes += 1;
        return work();
      },
      flush: async (opts: { reachServer?: boolean } = {}) => {
        flushes.push(opts);
      },
    },
  };
}

describe("afterEvents", () => {
  it("waits for the server round trip by default (people's replies), not when told (workers')", async () => {
    const people = recordingPublisher();
    const client = afterEvents(people.publisher, { "session.get": async () => "view" });
    expect(await client["session.get"]()).toBe("view");
    expect(people.flushes).toEqual([{ reachServer: true }]);

    const workers = recordingPublisher();
    const agent = afterEvents(workers.publisher, { heartbeat: async () => "ok" }, { reachServer: false });
    expect(await agent.heartbeat()).toBe("ok");
    expect(workers.flushes).toEqual([{ reachServer: false }]);
  });

  it("scopes each request and flushes after a handler that threw", async () => {
    const r = recordingPublisher();
    const handlers = afterEvents(r.publisher, {
      a: async () => 1,
      b: async () => {
        throw new Error("refused");
      },
    });
    await handlers.a();
    await expect(handlers.b()).rejects.toThrow("refused");
    expect(r.scopes()).toBe(2);
    expect(r.flushes).toHaveLength(2);
  });
});
