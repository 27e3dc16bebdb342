// Tells people what a fence ended (docs/architecture.md "Host start-up"): the startup fence and the
// stop fence end turns, approvals, executions and permission prompts in one transaction; once the
// bus is up each of them gets its event, so a follower never waits for an end that already happened.
import { errorFields, type Logger } from "../../protocol/log.ts";
import type { PlanStore } from "../store/plan-store.ts";
import type { SessionStore } from "../store/session-store.ts";
import type { Db } from "../store/db.ts";
import type { EndedWork } from "../store/startup-fence.ts";
import type { Audience, EventPublisher } from "./event-publisher.ts";
import { interruptedPlanChanged, splitProposal } from "./plan-events.ts";

export async function announceEndedWork(
  deps: { db: Db; sessions: SessionStore; plans: PlanStore; events: EventPublisher; log: Logger },
  ended: EndedWork,
): Promise<void> {
  const { db, sessions, plans, events, log } = deps;
  const audiences = new Map<string, Audience>();
  const audienceOf = async (sessionId: string): Promise<Audience> => {
    let a = audiences.get(sessionId);
    if (!a) {
      const row = await sessions.getRow(db, sessionId);
      a = { sessionId, owner: row.owner, approvers: row.approvers };
      audiences.set(sessionId, a);
    }
    return a;
  };
  // Each announcement on its own: one that fails (a session gone) does not silence the others.
  const tell = async (what: string, fn: () => Promise<void>) => {
    try {
      await fn();
    } catch (err) {
      log.warn("host.fence_announce_failed", { what, ...errorFields(err) });
    }
  };
  for (const t of ended.endedTurns)
    await tell(t.turnId, async () =>
      events.publish(await audienceOf(t.sessionId), "turn.ended", {
        turnId: t.turnId,
        status: "aborted",
        code: t.code,
        reason:
          t.code === "HOST_STOPPING" ? "the host was stopped" : "the host restarted; nothing is replayed",
      }),
    );
  for (const proposalId of ended.fencedProposalIds)
    await tell(proposalId, async () => {
      const { view, audience } = splitProposal(await plans.get(proposalId));
      const mode = (await sessions.getRow(db, view.sessionId)).mode;
      events.publish(audience, "plan.changed", interruptedPlanChanged(view, mode));
    });
  for (const p of ended.deniedPermissions)
    await tell(p.requestId, async () =>
      events.publish(await audienceOf(p.sessionId), "permission.resolved", {
        requestId: p.requestId,
        turnId: p.turnId,
        toolCallId: p.toolCallId,
        tool: p.tool,
        decision: "deny",
        code: "PERMISSION_INTERRUPTED",
      }),
    );
}
