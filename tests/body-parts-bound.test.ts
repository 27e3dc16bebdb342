// Bodies in parts are bounded for the whole host and freed at turn end (docs/protocol.md "Message
// bounds"), written as the attack that found it: one worker holding six turns parked 389 M
// characters in parts and the host's memory stayed at 631 MB after turn.end. Here one worker (this
// test) claims six turns and sends parts of never-finished bodies on every one of them: the host
// takes at most MAX_HOST_PARTS_CHARS in all, refuses the rest HOST_OVERLOADED (retriable, nothing
// kept), stays up, and once the turns end a new turn may park its parts again.
import { describe, expect, it } from "vitest";
import { MAX_HOST_PARTS_CHARS } from "../services/host/bus/body-parts.ts";
import { MAX_PARTS_CHARS } from "../services/protocol/agent-schemas.ts";
import type { TurnAssignment } from "../services/protocol/schemas.ts";
import { agentTurnIn, sandboxWorkspace } from "./support/sandbox.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim, refusalCode } from "./support/worker-double.ts";

const stack = useStack("bodyparts", { host: true, timeoutMs: 120_000 });

describe("bodies in parts on one host", () => {
  it("six turns of one worker park at most the host's bound; ended turns free theirs", async () => {
    const max = stack.nc.info!.max_payload;
    // Each part as large as a request allows (its JSON escaping is nil for plain letters).
    const chunk = "p".repeat(Math.floor(max / 2));
    const perBody = Math.floor(MAX_PARTS_CHARS / chunk.length);
    const ws = sandboxWorkspace(stack, "parts");
    const project = await stack.client("alice").call("projects.create", { name: "parts", workspaceRoot: ws });
    const turns: TurnAssignment[] = [];
    for (let i = 0; i < 6; i++) turns.push(await agentTurnIn(stack, project.id));

    let accepted = 0;
    let refused: string | null = null;
    flood: for (const [t, a] of turns.entries())
      for (let body = 0; body < 8; body++)
        for (let index = 0; index < perBody; index++) {
          const sent = stack.agentClient.call("body.part", {
            turnId: a.turnId,
            token: a.token,
            partId: `b${t}_${body}`,
            index,
            count: perBody + 1, // never complete: the parts only wait
            text: chunk,
          });
          const outcome = await sent.then(
            () => null,
            () => refusalCode(sent),
          );
          if (outcome !== null) {
            refused = outcome;
            break flood;
          }
          accepted += chunk.length;
        }
    expect(refused).toBe("HOST_OVERLOADED");
    expect(accepted).toBeLessThanOrEqual(MAX_HOST_PARTS_CHARS);
    expect(accepted).toBeGreaterThan(MAX_HOST_PARTS_CHARS - 2 * chunk.length);
    // The host is up and serves the turns as before.
    await stack.agentClient.call("heartbeat", { turnId: turns[0]!.turnId, token: turns[0]!.token });

    // Their turns end: everything they parked is freed, so a new turn parks the whole bound again.
    for (const a of turns)
      await stack.agentClient.call("turn.end", { turnId: a.turnId, token: a.token, status: "completed" });
    const next = await agentTurnIn(stack, project.id);
    let again = 0;
    for (let index = 0; again + chunk.length <= MAX_HOST_PARTS_CHARS / 2; index++) {
      await stack.agentClient.call("body.part", {
        turnId: next.turnId,
        token: next.token,
        partId: `n${Math.floor(index / perBody)}`,
        index: index % perBody,
        count: perBody + 1,
        text: chunk,
      });
      again += chunk.length;
    }
    expect(again).toBeGreaterThan(MAX_HOST_PARTS_CHARS / 2 - chunk.length);
  });

  it("an assembled body is its request's own turn's: parts cannot carry a write into bob's session", async () => {
    const aliceWs = sandboxWorkspace(stack, "parts-alice");
    const bobWs = sandboxWorkspace(stack, "parts-bob");
    const alicePrj = await stack
      .client("alice")
      .call("projects.create", { name: "pa", workspaceRoot: aliceWs });
    const bobPrj = await stack.client("bob").call("projects.create", { name: "pb", workspaceRoot: bobWs });
    const a = await agentTurnIn(stack, alicePrj.id);
    const bobSession = await stack
      .client("bob")
      .call("session.create", { projectId: bobPrj.id, mode: "agent", permissionMode: "auto" });
    const b = await promptAndClaim(stack, bobSession.id, "go", "bob");
    const message = (text: string) => ({
      role: "assistant",
      content: [{ type: "text", text }],
      stopReason: "stop",
      timestamp: 1,
    });
    const park = (turn: TurnAssignment, partId: string, body: unknown) =>
      stack.agentClient.call("body.part", {
        turnId: turn.turnId,
        token: turn.token,
        partId,
        index: 0,
        count: 1,
        text: JSON.stringify(body),
      });
    const appendParts = (turn: TurnAssignment, partId: string) =>
      stack.agentClient.raw("append", { turnId: turn.turnId, token: turn.token, bodyParts: partId });

    // Parked under alice's turn, naming bob's: refused, whichever token the body carries.
    await park(a, "p1", { turnId: b.turnId, token: a.token, messages: [message("forged into bob")] });
    expect(await refusalCode(appendParts(a, "p1"))).toBe("INVALID_PARAMS");
    await park(a, "p2", { turnId: b.turnId, token: b.token, messages: [message("forged into bob")] });
    expect(await refusalCode(appendParts(a, "p2"))).toBe("INVALID_PARAMS");
    // Alice's parked body is not bob's turn's to take, even with bob's own token.
    await park(a, "p3", { turnId: a.turnId, token: a.token, messages: [message("alice's own")] });
    expect(await refusalCode(appendParts(b, "p3"))).toBe("INVALID_PARAMS");
    // Her own request takes it, once.
    expect(await appendParts(a, "p3")).toEqual({ appended: 1 });
    expect(await refusalCode(appendParts(a, "p3"))).toBe("INVALID_PARAMS");

    const texts = async (turn: TurnAssignment) =>
      JSON.stringify(
        (await stack.agentClient.call("context", { turnId: turn.turnId, token: turn.token })).messages,
      );
    expect(await texts(b)).not.toContain("forged");
    expect(await texts(b)).not.toContain("alice's own");
    expect((await texts(a)).split("alice's own").length - 1).toBe(1);
    expect(await texts(a)).not.toContain("forged");
  });
});
