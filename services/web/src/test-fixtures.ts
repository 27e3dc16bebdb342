// Views and sessions as the host sends them, for the console's unit tests.
import type { SessionEvent } from "../../protocol/events.ts";
import type { ProposalView, SessionView } from "../../protocol/schemas.ts";

export function sessionView(over: Partial<SessionView> & { machineState?: string } = {}): SessionView {
  return {
    id: "s1",
    projectId: "p1",
    title: "Fix the build",
    owner: "alice",
    approvers: [],
    mode: "agent",
    permissionMode: "inherit",
    planningState: "inactive",
    model: { provider: "scripted", model: "echo" },
    version: 1,
    activeTurnId: null,
    usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, lastTurn: null },
    createdAt: "2026-01-01T10:00:00.000Z",
    updatedAt: "2026-01-01T10:00:00.000Z",
    ...over,
  } as SessionView;
}

export function proposal(over: Partial<ProposalView> = {}): ProposalView {
  return {
    proposalId: "pr1",
    sessionId: "s1",
    turnId: "t1",
    toolCallId: "c1",
    title: "Rename the module",
    question: "Shall I rename it?",
    artifactPath: ".pi/plans/pr1.md",
    sha256: "0".repeat(64),
    byteSize: 10,
    status: "pending",
    action: null,
    targetPermissionMode: null,
    deadline: "2026-01-01T10:30:00.000Z",
    version: 1,
    executionId: null,
    executionState: null,
    errorCode: null,
    createdAt: "2026-01-01T10:00:00.000Z",
    resolvedAt: null,
    ...over,
  };
}

let cursor = 0;
/** A session event with the given seq (cursor grows with every call). */
export function ev<T extends SessionEvent["type"] | "machine.state">(
  type: T,
  seq: number,
  body: Record<string, unknown> = {},
  sessionId = "s1",
): SessionEvent {
  cursor += 1;
  return {
    type,
    sessionId,
    seq,
    cursor,
    at: `2026-01-01T10:${String(seq % 60).padStart(2, "0")}:00.000Z`,
    ...body,
  } as unknown as SessionEvent;
}
