import { describe, expect, it } from "vitest";
import { createClock } from "../clock.ts";
import { createLogger } from "../../runtime/log.ts";
import { REFUSALS_AUDITED_PER_MINUTE, createRefusalRecorder, replyRefusal } from "./reply-rules.ts";

describe("replyRefusal: the host answers only the caller's own inbox", () => {
  it("serves a reply under the caller's prefix", () => {
    expect(replyRefusal("_INBOX_alice.AbC123.7", "alice", false)).toBeNull();
    expect(replyRefusal("_INBOX_w-1.x", "w-1", false)).toBeNull();
  });

  it.each([
    ["$JS.API.STREAM.PURGE.PI_EVENTS", "not_an_inbox"],
    ["pi.evt.bob.s1.plan.changed", "not_an_inbox"],
    ["pi.agent.cancel.w1.turn-1", "not_an_inbox"],
    ["$SRV.PING", "not_an_inbox"],
    ["_INBOX_bob.x", "not_the_callers_inbox"],
    ["_INBOX_alicex.x", "not_the_callers_inbox"],
    ["_INBOX_alice", "not_an_inbox"],
    ["_INBOX_alice.", "not_an_inbox"],
    ["_INBOX_alice.>", "not_an_inbox"],
    ["_INBOX_alice.*.x", "not_an_inbox"],
    ["_INBOX_alice..x", "not_an_inbox"],
    ["_INBOX_.x", "not_an_inbox"],
    ["_INBOX.x", "not_an_inbox"],
  ])("refuses %s in production (%s)", (reply, reason) => {
    expect(replyRefusal(reply, "alice", false)).toBe(reason);
  });

  it("refuses a request without a reply subject", () => {
    expect(replyRefusal(undefined, "alice", false)).toBe("no_reply");
    expect(replyRefusal("", "alice", true)).toBe("no_reply");
  });

  it("development mode also answers the shared _INBOX., never anything that is not an inbox", () => {
    expect(replyRefusal("_INBOX.abc.1", "alice", true)).toBeNull();
    expect(replyRefusal("_INBOX_alice.abc", "alice", true)).toBeNull();
    expect(replyRefusal("_INBOX_bob.abc", "alice", true)).toBe("not_the_callers_inbox");
    expect(replyRefusal("$JS.API.STREAM.PURGE.X", "alice", true)).toBe("not_an_inbox");
  });

  it("a request that proves no caller may be refused into any private inbox, nothing else", () => {
    expect(replyRefusal("_INBOX_anyone.x", null, false)).toBeNull();
    expect(replyRefusal("pi.evt.bob.s.t", null, false)).toBe("not_an_inbox");
  });
});

describe("createRefusalRecorder", () => {
  it("audits each refusal up to the per-caller bound per minute, then only counts", async () => {
    let now = 1_000_000;
    const clock = createClock(() => now);
    const audited: string[] = [];
    const record = createRefusalRecorder({
      clock,
      log: createLogger("test", () => {}),
      audit: async (r) => {
        audited.push(r.caller ?? "");
      },
    });
    for (let i = 0; i < REFUSALS_AUDITED_PER_MINUTE + 10; i++)
      record({ subject: "pi.rpc.m.host.hello", reply: "$JS.API.X", caller: "m", reason: "not_an_inbox" });
    record({
      subject: "pi.rpc.n.host.hello",
      reply: "x".repeat(10_000),
      caller: "n",
      reason: "not_an_inbox",
    });
    await new Promise((r) => setImmediate(r));
    expect(audited.filter((c) => c === "m")).toHaveLength(REFUSALS_AUDITED_PER_MINUTE);
    expect(audited.filter((c) => c === "n")).toHaveLength(1);
    now += 60_000;
    record({ subject: "pi.rpc.m.host.hello", reply: "$JS.API.X", caller: "m", reason: "not_an_inbox" });
    await new Promise((r) => setImmediate(r));
    expect(audited.filter((c) => c === "m")).toHaveLength(REFUSALS_AUDITED_PER_MINUTE + 1);
  });
});
