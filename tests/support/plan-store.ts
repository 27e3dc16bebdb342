// The plan store alone on a test database (no host, no actor in between), and a pending proposal in
// a fresh project and Plan session: what the store-level plan suites (races, claims, history) each
// set up.
import { mkdirSync } from "node:fs";
import path from "node:path";
import { type Clock, createClock } from "../../services/host/clock.ts";
import { type Db, withTransaction } from "../../services/host/store/db.ts";
import { createPlanStore } from "../../services/host/store/plan-store.ts";
import { createProjectStore } from "../../services/host/store/project-store.ts";
import { createSessionStore } from "../../services/host/store/session-store.ts";
import { unwrap } from "../../services/protocol/result.ts";

/** The stores over `db`, with workspaces under `dir`, on `clock` (a fresh host clock by default). */
export function planStores(db: Db, dir: string, clock: Clock = createClock()) {
  const sessions = createSessionStore({ db, clock });
  const projects = createProjectStore({ db, clock, workspaceRoots: [dir] });
  const plans = createPlanStore({ db, clock, sessions, approvalTimeoutMs: 30 * 60_000 });
  return { db, dir, clock, sessions, projects, plans };
}

export type PlanStores = ReturnType<typeof planStores>;

/**
 * alice's project on a new workspace `name` (with `approvers` as members), a Plan session there,
 * its running prompt turn and the proposal that turn submitted by ExitPlanMode `toolCallId`.
 */
export async function pendingProposal(
  s: PlanStores,
  name: string,
  opts: { toolCallId: string; title: string; markdown: string; approvers?: string[] },
) {
  const ws = path.join(s.dir, name);
  mkdirSync(ws);
  const project = unwrap(await s.projects.create("alice", name, ws));
  for (const member of opts.approvers ?? []) await s.projects.members.add("alice", project.id, member);
  const session = unwrap(
    await s.sessions.createSession(
      "alice",
      { projectId: project.id, mode: "plan", ...(opts.approvers ? { approvers: opts.approvers } : {}) },
      "host-store",
    ),
  );
  const turnId = await withTransaction(s.db, (tx) =>
    s.sessions.insertTurn(tx, { sessionId: session.id, kind: "prompt", text: "plan" }),
  );
  const proposal = unwrap(
    await s.plans.submit({
      sessionId: session.id,
      turnId,
      toolCallId: opts.toolCallId,
      principal: "alice",
      args: { title: opts.title, markdown: opts.markdown, question: "Go?" },
    }),
  );
  return { ws, project, session, turnId, proposal };
}
