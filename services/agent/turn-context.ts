// One claimed turn's state and dependencies, shared by the steps that run it (turn-runner.ts) and
// drive its Agent (turn-drive.ts), and how those steps read the host's refusals.
import type { Agent } from "@mariozechner/pi-agent-core";
import type { NatsConnection } from "@nats-io/nats-core";
import { isAppError } from "../protocol/app-error.ts";
import { errorFields, type Logger } from "../runtime/log.ts";
import type { TypedAgentClient } from "../protocol/rpc-client.ts";
import type { TurnAssignment } from "../protocol/schemas.ts";
import type { ModelRegistry } from "./models-config.ts";
import type { Redact } from "./provider-text.ts";
import type { TurnFailureCode } from "../protocol/agent-schemas.ts";

export interface TurnRunnerDeps {
  nc: NatsConnection;
  prefix: string;
  /** The worker's bus identity: its turns' cancels arrive under it. */
  workerId: string;
  /** claim/context/append/heartbeat/turn.end: short timeout. */
  client: TypedAgentClient;
  /** tools.execute: long timeout (a tool may wait for a person's permission). */
  toolClient: TypedAgentClient;
  log: Logger;
  scriptedCallLog?: string | undefined;
  /** The models this worker can run (models-config.ts). */
  models: ModelRegistry;
  /** Removes the worker's keys, header values and credential shapes from provider text (provider-text.ts). */
  redact: Redact;
}

export type TurnOutcome =
  | { status: "completed" }
  | { status: "error"; error: string; code?: TurnFailureCode };

/** One running turn: what it was assigned, what it runs with, and how far it got toward an abort. */
export interface TurnContext {
  readonly assignment: TurnAssignment;
  readonly deps: TurnRunnerDeps;
  /** The fields of every log line about the turn. */
  readonly fields: { turnId: string; sessionId: string; kind: TurnAssignment["kind"] };
  readonly stop: AbortController;
  abortReason: string | undefined;
  abortCode: "WORKER_STOPPED" | undefined;
  agent: Agent | undefined;
  /** Set when the owning host lost the turn (ownerGone): nothing more is sent about it. */
  ownerLost: boolean;
}

export function newTurnContext(assignment: TurnAssignment, deps: TurnRunnerDeps): TurnContext {
  const { turnId, sessionId } = assignment;
  return {
    assignment,
    deps,
    fields: { turnId, sessionId, kind: assignment.kind },
    stop: new AbortController(),
    abortReason: undefined,
    abortCode: undefined,
    agent: undefined,
    ownerLost: false,
  };
}

export function abortTurn(t: TurnContext, reason: string, code?: "WORKER_STOPPED"): void {
  if (t.stop.signal.aborted) return;
  t.abortReason = reason;
  t.abortCode = code;
  t.deps.log.info("turn.abort", { ...t.fields, reason });
  t.stop.abort();
  t.agent?.abort();
}

export function loseOwner(t: TurnContext, err: unknown): void {
  if (t.ownerLost) return;
  t.ownerLost = true;
  t.deps.log.warn("turn.owner_lost", { ...t.fields, ...errorFields(err) });
  abortTurn(t, "the host no longer owns this turn");
}

export function isTransportError(err: unknown): boolean {
  return isAppError(err) && err.details?.transport === true;
}

/**
 * The host the worker talks to no longer owns the turn: it was taken over (SESSION_LEASE_LOST, or
 * HOST_FENCED for a host superseded whole) or is gone (nobody listens on its subjects). The turn is
 * then the new owner's to end (its fence announces it): the worker stops, reports nothing more.
 */
export function ownerGone(err: unknown): boolean {
  if (!isAppError(err)) return false;
  return (
    err.code === "SESSION_LEASE_LOST" ||
    err.code === "HOST_FENCED" ||
    (err.code === "HOST_UNAVAILABLE" && err.details?.noResponders === true)
  );
}

export function describe(err: unknown): string {
  if (isAppError(err)) return `${err.code}: ${err.message}`;
  return err instanceof Error ? err.message : String(err);
}
