// Session event types published on `<prefix>.evt.<principal>.<sessionId>.<type>` and kept as rows the
// host method `events.since` pages through. Every event body carries sessionId, the host's timestamp
// `at`, `seq` (the session's event sequence number 1, 2, 3, ...; clients drop duplicates by it) and
// the caller-wide `cursor`.
import type {
  ApprovalStatus,
  ExecutionState,
  OperatingMode,
  PermissionMode,
  PlanningState,
  ProposalView,
  TurnKind,
  TurnStatus,
} from "./schemas.ts";
import type { ErrorCode } from "./error-codes.ts";
import type { PermissionDecision, PermissionRisk } from "./permission-schemas.ts";

export interface EventBodies {
  "session.changed": {
    mode: OperatingMode;
    permissionMode: PermissionMode;
    planningState: PlanningState;
    version: number;
  };
  "turn.started": { turnId: string; kind: TurnKind };
  /** A worker took the turn (its lease began): until then no model runs for it. */
  "turn.claimed": { turnId: string; workerId: string };
  /** `reason`: what the worker or host said about a failed end (bounded text), for people. */
  "turn.ended": { turnId: string; status: TurnStatus; code?: ErrorCode; reason?: string };
  message: { turnId: string; role: "assistant"; text: string };
  "tool.called": { turnId: string; toolCallId: string; tool: string; args: Record<string, unknown> };
  "tool.result": {
    turnId: string;
    toolCallId: string;
    tool: string;
    decision: "allow" | "deny";
    isError: boolean;
    code?: ErrorCode;
    text: string;
  };
  "tool.output": {
    turnId: string;
    toolCallId: string;
    tool: string;
    stream: "stdout" | "stderr";
    /** This call's output chunks in order, from 0 (the event's own `seq` is the session's). */
    chunk: number;
    text: string;
  };
  "plan.changed": {
    state: PlanningState;
    action?: "submitted" | "approved" | "rejected" | "expired" | "interrupted";
    proposal?: ProposalView;
    targetPermissionMode?: string;
    execution?: { executionId: string; state: ExecutionState };
    status?: ApprovalStatus;
  };
  /** A tool call waits for a person (docs/protocol.md, "Permission prompts"): answer with `permissions.resolve` before `deadline`. */
  "permission.requested": {
    requestId: string;
    turnId: string;
    toolCallId: string;
    tool: string;
    risk: PermissionRisk;
    preview: Record<string, unknown>;
    deadline: string;
  };
  "permission.resolved": {
    requestId: string;
    turnId: string;
    toolCallId: string;
    tool: string;
    decision: PermissionDecision;
    code?: ErrorCode;
  };
  /**
   * The session actor's state value changed (nested values as a dotted path, e.g. `running.waiting`),
   * or "passivated" when its actor stopped; for viewers of the machine, not a state to act on.
   */
  "machine.state": { state: string };
  /**
   * People were named approver of the session (at session.create or by session.configure): who
   * named them. Sent to the owner and every approver, so each new approver learns who added them.
   */
  "approvers.added": { approvers: string[]; addedBy: string };
}

export type EventType = keyof EventBodies;
export const EVENT_TYPES: EventType[] = [
  "session.changed",
  "turn.started",
  "turn.claimed",
  "turn.ended",
  "message",
  "tool.called",
  "tool.output",
  "tool.result",
  "plan.changed",
  "permission.requested",
  "permission.resolved",
  "machine.state",
  "approvers.added",
];

/** What every event carries besides its type and body. */
export interface EventEnvelope {
  sessionId: string;
  at: string;
  /** The session's event sequence number: 1, 2, 3, ... per session, never repeated. */
  seq: number;
  /**
   * The event's caller-wide position (`events.since`): 32 hex digits that compare as strings in the
   * store's order; within one session they grow with `seq`. A client resumes from a page's `next`,
   * never from a live event's cursor (docs/protocol.md "Catching up").
   */
  cursor: string;
}

/**
 * One session event: a union discriminated by `type` (narrow with `e.type === "turn.ended"`), or
 * the one type named (`SessionEvent<"turn.ended">`).
 */
export type SessionEvent<T extends EventType = EventType> = {
  [K in T]: { type: K } & EventEnvelope & EventBodies[K];
}[T];
