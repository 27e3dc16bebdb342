// Tells people what a fence ended (docs/architecture.md "Host start-up"): the startup fence, the stop
// fence and a takeover end turns, approvals, executions and permission prompts in one transaction;
// once the bus is up each of them gets its event, so a follower never waits for an end that already
// happened. Every event of one announcement is stored in one statement (however many sessions it
// touched) and then published: a fence of ten thousand sessions costs a few statements, not tens
// of thousands.
import type { EventType } from "../../../protocol/events.ts";
import { errorFields, type Logger } from "../../../runtime/log.ts";
import type { PlanStore } from "../../store/plan-store.ts";
import type { EndedWork } from "../../store/startup-fence.ts";
import type { EventPublisher } from "./event-publisher.ts";
import { interruptedPlanChanged } from "./plan-events.ts";

/** Events of one announcement, written in batches of this many (each one statement). */
const BATCH = 5_000;
/** Batches written at once (each on its own pooled connection). */
const PARALLEL = 2;

export async function announceEndedWork(
  deps: { plans: Pick<PlanStore, "viewsWithMode">; events: Pick<EventPublisher, "publishMany">; log: Logger },
  ended: EndedWork,
): Promise<void> {
  const { plans, events, log } = deps;
  const out: Array<{ sessionId: string; type: EventType; body: Record<string, unknown> }> = [];
  for (const t of ended.endedTurns)
    out.push({
      sessionId: t.sessionId,
      type: "turn.ended",
      body: {
        turnId: t.turnId,
        status: "aborted",
        code: t.code,
        reason:
          t.code === "HOST_STOPPING" ? "the host was stopped" : "the host restarted; nothing is replayed",
      },
    });
  try {
    for (const { view, mode } of await plans.viewsWithMode(ended.fencedProposalIds))
      out.push({ sessionId: view.sessionId, type: "plan.changed", body: interruptedPlanChanged(view, mode) });
  } catch (err) {
    log.warn("host.fence_announce_failed", { what: "plan.changed", ...errorFields(err) });
  }
  for (const p of ended.deniedPermissions)
    out.push({
      sessionId: p.sessionId,
      type: "permission.resolved",
      body: {
        requestId: p.requestId,
        turnId: p.turnId,
        toolCallId: p.toolCallId,
        tool: p.tool,
        decision: "deny",
        code: "PERMISSION_INTERRUPTED",
      },
    });
  // A session's events stay together, in the order above, in one batch; batches of different
  // sessions are independent, so two are written at a time.
  const bySession = new Map<string, typeof out>();
  for (const e of out) {
    const list = bySession.get(e.sessionId);
    if (list) list.push(e);
    else bySession.set(e.sessionId, [e]);
  }
  const batches: Array<typeof out> = [[]];
  for (const list of bySession.values()) {
    if (batches.at(-1)!.length + list.length > BATCH && batches.at(-1)!.length > 0) batches.push([]);
    batches.at(-1)!.push(...list);
  }
  const store = async (batch: typeof out) => {
    try {
      await events.publishMany(batch);
    } catch (err) {
      // A batch that cannot be stored (a session deleted meanwhile) is told one by one, so the
      // others are not silenced.
      log.warn("host.fence_announce_failed", { what: "batch", events: batch.length, ...errorFields(err) });
      for (const e of batch)
        await events.publishMany([e]).catch((one) =>
          log.warn("host.fence_announce_failed", {
            what: e.type,
            sessionId: e.sessionId,
            ...errorFields(one),
          }),
        );
    }
  };
  let next = 0;
  const worker = async () => {
    while (next < batches.length) await store(batches[next++]!);
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}
