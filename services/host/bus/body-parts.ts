// Worker request bodies too big for one NATS message (docs/protocol.md "Message bounds"): the worker
// sends the body's JSON text in parts (`body.part`), then the request as `{turnId, token, bodyParts}`.
// Parts wait here, in memory and bounded: at most MAX_PARTS_CHARS characters per body, a few bodies
// per turn, gone after PARTS_TTL_MS or once assembled. After a host restart they are gone with the
// turn itself (the fence ended it).
import { AppError } from "../../protocol/app-error.ts";
import { MAX_PARTS_CHARS } from "../../protocol/agent-schemas.ts";
import type { BodyPartParams } from "../../protocol/schemas.ts";
import type { Clock } from "../clock.ts";

export const PARTS_TTL_MS = 10 * 60_000;
/** Bodies one turn may have in parts at once. */
export const BODIES_PER_TURN = 8;

interface Body {
  turnId: string;
  count: number;
  parts: Array<string | undefined>;
  chars: number;
  at: number;
}

export function createBodyParts(deps: { clock: Clock }) {
  const bodies = new Map<string, Body>();
  const key = (turnId: string, partId: string) => `${turnId}\u0000${partId}`;

  function sweep(now: number): void {
    for (const [k, b] of bodies) if (now - b.at > PARTS_TTL_MS) bodies.delete(k);
  }

  return {
    /** Keeps one part (a repeated part replaces itself); refuses what breaks a bound. */
    put(p: BodyPartParams): { partId: string; received: number } {
      const now = deps.clock.now();
      sweep(now);
      const k = key(p.turnId, p.partId);
      let b = bodies.get(k);
      if (!b) {
        const ofTurn = [...bodies.values()].filter((x) => x.turnId === p.turnId).length;
        if (ofTurn >= BODIES_PER_TURN)
          throw new AppError(
            "INVALID_PARAMS",
            `at most ${BODIES_PER_TURN} bodies of a turn may wait in parts`,
          );
        b = { turnId: p.turnId, count: p.count, parts: new Array(p.count), chars: 0, at: now };
        bodies.set(k, b);
      }
      if (b.count !== p.count || p.index >= b.count)
        throw new AppError("INVALID_PARAMS", `part ${p.index} does not fit a body of ${b.count} parts`);
      const chars = b.chars - (b.parts[p.index]?.length ?? 0) + p.text.length;
      if (chars > MAX_PARTS_CHARS) {
        bodies.delete(k);
        throw new AppError("INVALID_PARAMS", `a body in parts holds at most ${MAX_PARTS_CHARS} characters`);
      }
      b.parts[p.index] = p.text;
      b.chars = chars;
      b.at = now;
      return { partId: p.partId, received: b.parts.filter((x) => x !== undefined).length };
    },

    /** The assembled body, parsed; refused when a part is missing or it is not a JSON object. */
    take(turnId: string, partId: string): Record<string, unknown> {
      const k = key(turnId, partId);
      const b = bodies.get(k);
      if (!b || b.parts.some((x) => x === undefined))
        throw new AppError("INVALID_PARAMS", `the body in parts ${partId} is not complete`);
      bodies.delete(k);
      let body: unknown;
      try {
        body = JSON.parse(b.parts.join(""));
      } catch {
        throw new AppError("INVALID_PARAMS", `the body in parts ${partId} is not JSON`);
      }
      if (typeof body !== "object" || body === null || Array.isArray(body))
        throw new AppError("INVALID_PARAMS", `the body in parts ${partId} is not a JSON object`);
      return body as Record<string, unknown>;
    },

    /** How many bodies wait (tests). */
    size(): number {
      return bodies.size;
    },
  };
}

export type BodyParts = ReturnType<typeof createBodyParts>;
