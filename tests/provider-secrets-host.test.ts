// Defence in depth on the host: a worker that forgets to redact (an old or a buggy one, played here
// by the test through the agent protocol) sends turn.end with a provider's text holding credentials.
// The host removes the credential shapes before the reason is stored (turns, audit) or published to
// the owner and an approver; the rest of the text, and what the host cannot know to be a secret (a
// worker's own configured values), stays as sent.
import { describe, expect, it } from "vitest";
import { REDACTED } from "../services/runtime/secret-redaction.ts";
import { rows, turnEnded } from "./support/plans.ts";
import { addMembers } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { promptAndClaim } from "./support/worker-double.ts";

const stack = useStack("provsecretshost", { host: true });

const OPENAI_KEY = "sk-proj-Zx81Qw0Lk2Ty6Rb4Nm7Vc3Hs9Gd5Fa1Pe";
const GITHUB_TOKEN = "ghp_R4nd0mLook1ngT0kenV4lue0123456789";
const AWS_KEY_ID = "AKIAQWERTY1234567890";

describe("the host redacts credential shapes in a worker's turn.end reason", () => {
  it("before the reason is stored or reaches the owner and an approver", async () => {
    const alice = stack.client("alice");
    const ws = stack.newWorkspace("host-redacts");
    const project = await alice.call("projects.create", { name: "hr", workspaceRoot: ws });
    await addMembers(stack, project.id, ["carol"]);
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "agent",
      approvers: ["carol"],
    });
    const owner = stack.events(session.id, "alice");
    const approver = stack.events(session.id, "carol");
    const a = await promptAndClaim(stack, session.id);
    const error = `401 Incorrect API key provided: Bearer ${OPENAI_KEY}; also ${GITHUB_TOKEN}, ${AWS_KEY_ID} and the worker's own plain-value-1234`;
    await stack.agentClient.call("turn.end", {
      turnId: a.turnId,
      token: a.token,
      status: "error",
      code: "PROVIDER_UNAUTHORIZED",
      error,
    });
    const reason = `401 Incorrect API key provided: Bearer ${REDACTED}; also ${REDACTED}, ${REDACTED} and the worker's own plain-value-1234`;
    for (const events of [owner, approver])
      expect(await turnEnded(events, a.turnId)).toMatchObject({
        status: "error",
        code: "PROVIDER_UNAUTHORIZED",
        reason,
      });
    owner.stop();
    approver.stop();

    for (const principal of ["alice", "carol"]) {
      const page = await stack.client(principal).call("audit.list", { sessionId: session.id });
      expect(page.entries.find((e) => e.action === "turn.end")).toMatchObject({ details: { reason } });
    }
    const stored = JSON.stringify(
      await rows(
        stack,
        "SELECT * FROM audit_log a JOIN turns t ON t.id = a.turn_id WHERE t.session_id = $1",
        [session.id],
      ),
    );
    for (const secret of [OPENAI_KEY, GITHUB_TOKEN, AWS_KEY_ID]) {
      expect(stored).not.toContain(secret);
      expect(JSON.stringify(owner.all)).not.toContain(secret);
      expect(stack.host!.lines.join("\n")).not.toContain(secret);
    }
  });
});
