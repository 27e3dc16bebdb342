// Turn dispatch to agent workers (DESIGN §4): offers to the worker queue group until one worker
// claims, capability tokens bound to (session, turn), heartbeated leases, and revocation. In memory
// on purpose: after a restart the fence has ended every turn, so nothing here needs to survive.
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { NatsConnection } from "@nats-io/nats-core";
import { encodeJson } from "../protocol/envelope.ts";
import type { Logger } from "../protocol/log.ts";
import type { TurnKind } from "../protocol/schemas.ts";
import { agentSubject, turnCancelSubject } from "../protocol/subjects.ts";
import type { Clock } from "./clock.ts";

interface Offer {
  turnId: string;
  sessionId: string;
  kind: TurnKind;
}

export interface Lease extends Offer {
  token: string;
  workerId: string;
  lastBeat: number;
}

export function createTurnDispatcher(deps: {
  nc: NatsConnection;
  prefix: string;
  clock: Clock;
  leaseMs: number;
  offerIntervalMs: number;
  log: Logger;
  onLeaseLost: (lease: Lease) => void;
}) {
  const offers = new Map<string, Offer>();
  const leases = new Map<string, Lease>();

  const publishOffer = (o: Offer) => deps.nc.publish(agentSubject(deps.prefix, "offer"), encodeJson(o));

  const timer = setInterval(() => {
    for (const o of offers.values()) publishOffer(o);
    const now = deps.clock.now();
    for (const lease of [...leases.values()]) {
      if (now - lease.lastBeat > deps.leaseMs) {
        leases.delete(lease.turnId);
        deps.log.warn("turn.lease_lost", { turnId: lease.turnId, workerId: lease.workerId });
        deps.nc.publish(
          turnCancelSubject(deps.prefix, lease.turnId),
          encodeJson({ reason: "TURN_LEASE_EXPIRED" }),
        );
        deps.onLeaseLost(lease);
      }
    }
  }, deps.offerIntervalMs);
  timer.unref();

  return {
    offer(o: Offer): void {
      offers.set(o.turnId, o);
      publishOffer(o);
    },
    /** Re-publishes every waiting offer (a worker said hello). */
    reoffer(): void {
      for (const o of offers.values()) publishOffer(o);
    },
    /** Takes a waiting offer for a claim; a second claim of the same turn gets null. */
    take(turnId: string): Offer | null {
      const o = offers.get(turnId);
      if (!o) return null;
      offers.delete(turnId);
      return o;
    },
    restore(o: Offer): void {
      offers.set(o.turnId, o);
    },
    /** Whether the turn is offered or leased right now; false means no worker will ever run it. */
    has(turnId: string): boolean {
      return offers.has(turnId) || leases.has(turnId);
    },
    grant(o: Offer, workerId: string): Lease {
      const lease: Lease = {
        ...o,
        workerId,
        token: `tok_${randomBytes(24).toString("base64url")}`,
        lastBeat: deps.clock.now(),
      };
      leases.set(o.turnId, lease);
      return lease;
    },
    /** The live lease whose token matches, or null (missing, revoked or foreign token). */
    check(turnId: unknown, token: unknown): Lease | null {
      if (typeof turnId !== "string" || typeof token !== "string") return null;
      const lease = leases.get(turnId);
      if (!lease) return null;
      const a = Buffer.from(lease.token);
      const b = Buffer.from(token);
      return a.length === b.length && timingSafeEqual(a, b) ? lease : null;
    },
    beat(lease: Lease): void {
      lease.lastBeat = deps.clock.now();
    },
    /** Ends a turn's token and any waiting offer; tells the worker to stop. */
    revoke(turnId: string | null): void {
      if (!turnId) return;
      offers.delete(turnId);
      if (leases.delete(turnId))
        deps.nc.publish(turnCancelSubject(deps.prefix, turnId), encodeJson({ reason: "revoked" }));
    },
    /** Revokes the token without a cancel notice: the run parked normally (ExitPlanMode). */
    park(turnId: string | null): void {
      if (turnId) leases.delete(turnId);
    },
    stop(): void {
      clearInterval(timer);
    },
  };
}

export type TurnDispatcher = ReturnType<typeof createTurnDispatcher>;
