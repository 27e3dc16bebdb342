// What a client method's handler is given and answers (host-bus.ts serves every one the same way):
// its params decoded once by the bus from the METHODS table, and what the bus learned before the
// handler runs (the routing read's session, the gate's row), so a handler never decodes, checks its
// gate or reads the same row again.
import type { ClientMethod, MethodOfGroup, MethodSpec, ParamsOf, ResultOf } from "../../protocol/methods.ts";
import type { Result } from "../../protocol/result.ts";
import type { SessionRow } from "../store/session-store.ts";

export interface RequestContext {
  /** The session the routing read found (forward.ts placement). */
  sessionId?: string;
  /**
   * The row of the session the request names by `sessionId`, read by the gate (gates.ts) that let
   * the caller through: its owner for an `owner` gate, its owner or an approver for `approver`.
   */
  session?: SessionRow;
}

/**
 * A client method's handler: the caller, the params as its method's schema decoded them, and the
 * request's context; it answers its method's result, or an expected refusal as a value (result.ts).
 */
export type ClientHandler<M extends ClientMethod> = (
  principal: string,
  params: ParamsOf<M>,
  ctx: RequestContext,
) => Promise<Result<ResultOf<M>>>;

/** The handlers one file serves (`group` in the METHODS table). */
export type ClientHandlers<G extends Exclude<MethodSpec["group"], "agent">> = {
  [M in MethodOfGroup<G> & ClientMethod]: ClientHandler<M>;
};

/** Every client method's handler, as the bus serves them. */
export type ClientHandlerMap = { [M in ClientMethod]: ClientHandler<M> };

/** A handler as the bus calls it once the method is known from the subject (its types erased). */
export type AnyClientHandler = (principal: string, params: unknown, ctx: RequestContext) => Promise<unknown>;
