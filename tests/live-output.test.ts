// Streamed model output reaches people as it arrives (issue #13 clause 4): a real worker sends the
// scripted model's text deltas to the host (`delta`, checked by the turn's token), the host
// publishes them coalesced on the live subject of the owner and the approvers, never stored and
// never numbered; the durable `message` event still holds the whole text, and comes after them.
// A worker without the turn's token cannot publish live output for it.
import { describe, expect, it } from "vitest";
import { decodeJson } from "../services/protocol/envelope.ts";
import { liveSubject } from "../services/protocol/subjects.ts";
import { addMembers } from "./support/stack.ts";
import { turnEnded } from "./support/plans.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";
import { isEvent } from "./support/events.ts";

const stack = useStack("live", { host: true });

interface Live {
  type: "delta";
  sessionId: string;
  turnId: string;
  chunks: Array<{ kind: string; text: string }>;
  at: string;
}

function listen(principal: string, sessionId: string) {
  const got: Array<{ live: Live; receivedAt: number }> = [];
  const sub = stack.nc.subscribe(liveSubject(stack.env.prefix, principal, sessionId), {
    callback: (_e, m) => {
      got.push({ live: decodeJson(m.data) as Live, receivedAt: Date.now() });
    },
  });
  return { got, stop: () => sub.unsubscribe() };
}

describe("live model output", () => {
  it("the model's text reaches owner and approver as it streams, then the message event holds it all", async () => {
    const text = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("live");
    const project = await alice.call("projects.create", { name: "live", workspaceRoot: ws });
    await addMembers(stack, project.id, ["bob"]);
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
      permissionMode: "auto",
      approvers: ["bob"],
      model: { provider: "scripted", model: "talk", script: [{ text }] },
    });
    const forAlice = listen("alice", session.id);
    const forBob = listen("bob", session.id);
    const events = stack.events(session.id);
    let messageAt = 0;
    void events
      .waitFor((e) => e.type === "message")
      .then(() => {
        messageAt = Date.now();
      });
    await stack.nc.flush();
    await stack.startWorker();
    const { turnId } = await alice.call("session.prompt", {
      sessionId: session.id,
      text: "talk",
    });
    await turnEnded(events, turnId, 30_000);

    for (const l of [forAlice, forBob]) {
      expect(l.got.length).toBeGreaterThan(0);
      const joined = l.got
        .flatMap((g) => g.live.chunks.filter((c) => c.kind === "text").map((c) => c.text))
        .join("");
      expect(joined).toBe(text);
      for (const g of l.got) {
        expect(g.live).toMatchObject({ type: "delta", sessionId: session.id, turnId });
        expect(g.live).not.toHaveProperty("seq");
        expect(g.live.chunks.reduce((n, c) => n + c.text.length, 0)).toBeLessThanOrEqual(16 * 1024);
      }
      // Coalesced: consecutive live messages at least 100 ms apart (host clock).
      for (let i = 1; i < l.got.length; i++)
        expect(Date.parse(l.got[i]!.live.at) - Date.parse(l.got[i - 1]!.live.at)).toBeGreaterThanOrEqual(95);
    }
    const message = events.all.find(isEvent("message"));
    expect(message?.text).toBe(text);
    expect(forAlice.got[0]!.receivedAt).toBeLessThanOrEqual(messageAt);
    // Not kept: nothing of it is an event a client could page through.
    const stored = await stack.db.pool.query(
      "SELECT count(*)::int AS n FROM session_events WHERE type = 'delta'",
    );
    expect(stored.rows[0].n).toBe(0);
    forAlice.stop();
    forBob.stop();
    events.stop();
    await stack.worker!.stop();
  }, 60_000);

  it("a delta without the turn's token is refused and publishes nothing", async () => {
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("live2");
    const project = await alice.call("projects.create", { name: "live2", workspaceRoot: ws });
    const session = await alice.call("session.create", { projectId: project.id, mode: "agent" });
    const a = await promptAndClaim(stack, session.id);
    const l = listen("alice", session.id);
    await stack.nc.flush();
    expect(
      await refusalCode(
        stack.agentClient.call("delta", {
          turnId: a.turnId,
          token: "tok_forged",
          index: 0,
          kind: "text",
          text: "fake",
        }),
      ),
    ).toBe("TURN_TOKEN_INVALID");
    await new Promise((r) => setTimeout(r, 300));
    expect(l.got).toEqual([]);
    l.stop();
  });
});
