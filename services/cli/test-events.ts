// Fixtures shared by the CLI's unit tests: session events and proposals as the host sends them.
import type { EventBodies, EventType, SessionEvent } from "../protocol/events.ts";
import type { ProposalView } from "../protocol/schemas.ts";

export const AT = "2025-01-01T00:00:00.000Z";

export function ev<T extends EventType>(type: T, body: EventBodies[T], sessionId = "s1"): SessionEvent<T> {
  // Without seq and cursor: the CLI's renderers under test read neither.
  return { type, sessionId, at: AT, ...body } as unknown as SessionEvent<T>;
}

export function proposalView(over: Partial<ProposalView> = {}): ProposalView {
  return {
    proposalId: "p1",
    sessionId: "s1",
    turnId: "t1",
    toolCallId: "call-1",
    title: "Add a greeting",
    question: "Shall I write GREETING.md?",
    artifactPath: ".pi/plan/add-a-greeting-20250101T000000Z.md",
    sha256: "ab".repeat(32),
    byteSize: 120,
    status: "pending",
    action: null,
    targetPermissionMode: null,
    deadline: "2025-01-01T00:30:00.000Z",
    version: 1,
    executionId: null,
    executionState: null,
    errorCode: null,
    createdAt: AT,
    resolvedAt: null,
    ...over,
  };
}
