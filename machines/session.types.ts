// Types of the session machine (machines/session.machine.ts): its context, the events the host sends
// and the facts and outputs of its I/O steps. Only `import type` from the wire contract.
import type { ErrorCode } from "../services/protocol/error-codes.ts";
import type {
  OperatingMode,
  PlansResolveParams,
  SessionConfigureParams,
  SessionPromptParams,
  TurnKind,
} from "../services/protocol/schemas.ts";

export type Mode = OperatingMode;
export type { PlansResolveParams };

/** Decoded `session.prompt` and `session.configure` params: the contract's own types. */
export type PromptParams = SessionPromptParams;
export type ConfigureParams = SessionConfigureParams;

/** A reply channel carried by request events; exactly one of ok/fail is called once. */
export interface Reply {
  ok(result: unknown): void;
  fail(code: ErrorCode, message?: string): void;
  /** Forwards a thrown error (an AppError reaches the caller; anything else is INTERNAL). */
  error(err: unknown): void;
}

/** Where the rows say the session stands (what loadSession returns). */
export interface SessionFacts {
  mode: Mode;
  activeTurnId: string | null;
  activeTurnKind: TurnKind | null;
  /** The running turn has no worker lease: parked behind a pending approval, or an unclaimed execution. */
  pendingProposalId: string | null;
  pendingDeadlineMs: number | null;
  queuedExecutionTurnId: string | null;
  /** A worker still holds the running turn's lease (the actor was restarted mid-turn). */
  leased?: boolean;
}

export type TurnEndStatus = "completed" | "error" | "aborted";

export type SessionEvent =
  | { type: "PROMPT"; params: PromptParams; reply: Reply }
  | { type: "CONFIGURE"; params: ConfigureParams; reply: Reply }
  | { type: "ABORT"; reply: Reply }
  | { type: "RESOLVE"; params: PlansResolveParams; principal: string; reply: Reply }
  | { type: "CLAIM"; turnId: string; workerId: string; reply: Reply }
  | { type: "ENTER_PLAN"; turnId: string; toolCallId: string; reply: Reply }
  | { type: "SUBMIT_PLAN"; turnId: string; toolCallId: string; args: Record<string, unknown>; reply: Reply }
  | {
      type: "TURN_ENDED";
      turnId: string;
      status: TurnEndStatus;
      code?: ErrorCode;
      reason?: string;
      reply?: Reply;
    }
  /** Test hooks only: the provided injectFault action throws, as a bug in an action would. */
  | { type: "FAULT" };

export type SessionEventType = SessionEvent["type"];
export type SessionEventOf<T extends SessionEventType> = Extract<SessionEvent, { type: T }>;

export interface SessionContext {
  sessionId: string;
  mode: Mode;
  turnId: string | null;
  turnKind: TurnKind | null;
  proposalId: string | null;
  deadlineMs: number | null;
  /** The execution turn waits for a worker's claim (approved, not yet running). */
  queued: boolean;
  /** A worker holds the current turn's lease (claimed); only then can it call tools or end it. */
  leased: boolean;
  /** The reply of the request being worked on; replaced by the next request (a Reply answers once). */
  reply: Reply | null;
  /** The event that started the current I/O step (input of the invoked actor). */
  request: SessionEvent | null;
}

export type StepOutput = Partial<SessionFacts> & { result?: unknown };
export interface StepInput {
  context: SessionContext;
  request: SessionEvent | null;
}

/** The request event of a step, of the type the step was started for; anything else is a bug. */
export function requestOf<T extends SessionEventType>(input: StepInput, type: T): SessionEventOf<T> {
  const r = input.request;
  if (!r || !isEvent(r, type)) throw new Error(`expected ${type}`);
  return r;
}

function isEvent<T extends SessionEventType>(e: SessionEvent, type: T): e is SessionEventOf<T> {
  return e.type === type;
}

export const BUSY = "AGENT_BUSY" satisfies ErrorCode;
export const CONFIG_BLOCKED = "PLAN_CONFIGURATION_BLOCKED" satisfies ErrorCode;
