// The test acting as an agent worker through the documented protocol: prompt a session, wait for
// the host's offer of that turn and claim it, so the test holds the turn's capability token.
import { AppError } from "../../services/protocol/app-error.ts";
import { decodeJson } from "../../services/protocol/envelope.ts";
import type { ToolExecuteResult, TurnAssignment, TurnOffer } from "../../services/protocol/schemas.ts";
import { agentClient } from "../../services/protocol/rpc-client.ts";
import { agentSubject } from "../../services/protocol/subjects.ts";
import type { Stack } from "./stack.ts";

export async function promptAndClaim(
  stack: Stack,
  sessionId: string,
  text = "go",
  principal = "alice",
): Promise<TurnAssignment> {
  const offers = stack.nc.subscribe(agentSubject(stack.env.prefix, "offer"));
  const { turnId } = await stack.client(principal).call("session.prompt", { sessionId, text });
  let host = stack.agentClient.host;
  for await (const m of offers) {
    const offer = decodeJson(m.data) as TurnOffer;
    if (offer.turnId !== turnId) continue;
    host = offer.host;
    break;
  }
  offers.unsubscribe();
  // The claim goes to the host the offer names (the turn's owner), as a worker sends it.
  return stack.agentClient.to(host).call("claim", { turnId, workerId: "testworker" });
}

/** The stable code a request was refused with; fails when it succeeded or threw something else. */
export async function refusalCode(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof AppError))
    throw new Error(`expected a refusal, got ${err === null ? "success" : String(err)}`);
  return err.code;
}

/**
 * One tool call of a claimed turn, alone in its batch, as the worker would send it. `timeoutMs`
 * replaces the stack's short agent timeout for a tool bounded by a longer deadline of its own (the
 * real worker sends tools.execute on a long-timeout client, turn-runner.ts).
 */
export function executeTool(
  stack: Stack,
  a: TurnAssignment,
  toolCallId: string,
  tool: string,
  args: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  timeoutMs?: number,
): Promise<ToolExecuteResult> {
  const client =
    timeoutMs === undefined
      ? stack.agentClient.to(a.host)
      : agentClient({ nc: stack.nc, prefix: stack.env.prefix, timeoutMs }).to(a.host);
  return client.call("tools.execute", {
    sessionId: a.sessionId,
    turnId: a.turnId,
    token: a.token,
    toolCallId,
    tool,
    args,
    batch: [{ toolCallId, tool }],
    ...extra,
  });
}
