// Worker request bodies too big for one NATS message (docs/protocol.md "Message bounds"): the worker
// sends the body's JSON text in parts (`body.part`), then the request as `{turnId, token, bodyParts}`.
// Parts wait here, in memory and bounded: at most MAX_PARTS_CHARS characters per body, a few bodies
// per turn, MAX_HOST_PARTS_CHARS for every turn of this host together, gone once assembled, when
// their turn's token dies (it ends, parks or is revoked: `dropTurn`) or after PARTS_TTL_MS. After a
// host restart they are gone with the turn itself (the fence ended it).
import { MAX_PARTS_CHARS } from "../../protocol/agent-schemas.ts";
import { ok, type Result, refuse } from "../../protocol/result.ts";
import type { BodyPartParams } from "../../protocol/schemas.ts";
import type { Clock } from "../clock.ts";

export const PARTS_TTL_MS = 10 * 60_000;
/** Bodies one turn may have in parts at once. */
export const BODIES_PER_TURN = 8;
/**
 * Characters waiting in parts on this host, every turn and worker together: four whole bodies. One
 * worker holding many turns cannot park hundreds of megabytes; a part past it is HOST_OVERLOADED
 * (retriable: it fits again once bodies are assembled or their turns end).
 */
export const MAX_HOST_PARTS_CHARS = 4 * MAX_PARTS_CHARS;

interface Body {
  turnId: string;
  count: number;
  parts: Array<string | undefined>;
  chars: number;
  at: number;
}

export function createBodyParts(deps: { clock: Clock; maxHostChars?: number }) {
  const maxHostChars = deps.maxHostChars ?? MAX_HOST_PARTS_CHARS;
  const bodies = new Map<string, Body>();
  /** Characters held by every body here (the host-wide bound). */
  let held = 0;
  const key = (turnId: string, partId: string) => `${turnId}\u0000${partId}`;
  const drop = (k: string) => {
    const b = bodies.get(k);
    if (!b) return;
    held -= b.chars;
    bodies.delete(k);
  };

  function sweep(now: number): void {
    for (const [k, b] of bodies) if (now - b.at > PARTS_TTL_MS) drop(k);
  }

  return {
    /** Keeps one part (a repeated part replaces itself); refuses what breaks a bound. */
    put(p: BodyPartParams): Result<{ partId: string; received: number }> {
      const now = deps.clock.now();
      sweep(now);
      const k = key(p.turnId, p.partId);
      let b = bodies.get(k);
      if (!b) {
        const ofTurn = [...bodies.values()].filter((x) => x.turnId === p.turnId).length;
        if (ofTurn >= BODIES_PER_TURN)
          return refuse("INVALID_PARAMS", `at most ${BODIES_PER_TURN} bodies of a turn may wait in parts`);
        b = { turnId: p.turnId, count: p.count, parts: new Array(p.count), chars: 0, at: now };
        bodies.set(k, b);
      }
      if (b.count !== p.count || p.index >= b.count)
        return refuse("INVALID_PARAMS", `part ${p.index} does not fit a body of ${b.count} parts`);
      const chars = b.chars - (b.parts[p.index]?.length ?? 0) + p.text.length;
      if (chars > MAX_PARTS_CHARS) {
        drop(k);
        return refuse("INVALID_PARAMS", `a body in parts holds at most ${MAX_PARTS_CHARS} characters`);
      }
      if (held - b.chars + chars > maxHostChars) {
        if (b.chars === 0) bodies.delete(k);
        return refuse(
          "HOST_OVERLOADED",
          `this host holds ${maxHostChars} characters of bodies in parts at most; retry once bodies are assembled or their turns end`,
        );
      }
      b.parts[p.index] = p.text;
      held += chars - b.chars;
      b.chars = chars;
      b.at = now;
      return ok({ partId: p.partId, received: b.parts.filter((x) => x !== undefined).length });
    },

    /** The assembled body, parsed; refused when a part is missing or it is not a JSON object. */
    take(turnId: string, partId: string): Result<Record<string, unknown>> {
      const k = key(turnId, partId);
      const b = bodies.get(k);
      if (!b || b.parts.some((x) => x === undefined))
        return refuse("INVALID_PARAMS", `the body in parts ${partId} is not complete`);
      drop(k);
      let body: unknown;
      try {
        body = JSON.parse(b.parts.join(""));
      } catch {
        return refuse("INVALID_PARAMS", `the body in parts ${partId} is not JSON`);
      }
      if (typeof body !== "object" || body === null || Array.isArray(body))
        return refuse("INVALID_PARAMS", `the body in parts ${partId} is not a JSON object`);
      return ok(body as Record<string, unknown>);
    },

    /** Frees every body of a turn whose token died (ended, parked, revoked, lost). */
    dropTurn(turnId: string): void {
      for (const [k, b] of bodies) if (b.turnId === turnId) drop(k);
    },

    /** How many bodies wait, and their characters (tests, host.status). */
    size(): number {
      return bodies.size;
    },
    heldChars: () => held,
  };
}

export type BodyParts = ReturnType<typeof createBodyParts>;
