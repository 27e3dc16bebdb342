// Bodies in parts are bounded per body, per turn and for the whole host, and freed when their turn's
// token dies (body-parts.ts): one worker holding many turns cannot park hundreds of megabytes.
import { describe, expect, it } from "vitest";
import type { Result } from "../../protocol/result.ts";
import { createClock } from "../clock.ts";
import { createBodyParts } from "./body-parts.ts";

const part = (turnId: string, partId: string, index: number, count: number, text: string) => ({
  turnId,
  token: "t",
  partId,
  index,
  count,
  text,
});

/** The refusal's code, or null for a part or body taken (a throw fails the test: refusals are values). */
function codeOf(fn: () => Result<unknown>): string | null {
  const r = fn();
  return r.ok ? null : r.refusal.code;
}

describe("bodies in parts", () => {
  it("refuses a part past the host-wide bound with HOST_OVERLOADED, whichever turn sends it", () => {
    const parts = createBodyParts({ clock: createClock(), maxHostChars: 100 });
    parts.put(part("turn_a", "p1", 0, 2, "x".repeat(40)));
    parts.put(part("turn_b", "p2", 0, 2, "y".repeat(40)));
    expect(parts.heldChars()).toBe(80);
    expect(codeOf(() => parts.put(part("turn_c", "p3", 0, 1, "z".repeat(30))))).toBe("HOST_OVERLOADED");
    expect(codeOf(() => parts.put(part("turn_a", "p1", 1, 2, "x".repeat(30))))).toBe("HOST_OVERLOADED");
    // Nothing of the refused parts is kept.
    expect(parts.heldChars()).toBe(80);
    expect(parts.size()).toBe(2);
    // A part replaced by a shorter one fits again.
    parts.put(part("turn_b", "p2", 0, 2, "y".repeat(10)));
    expect(parts.heldChars()).toBe(50);
  });

  it("frees every body of a turn whose token died, and assembled bodies at once", () => {
    const parts = createBodyParts({ clock: createClock(), maxHostChars: 100 });
    parts.put(part("turn_a", "p1", 0, 2, "x".repeat(45)));
    parts.put(part("turn_a", "p2", 0, 1, JSON.stringify({ a: 1 })));
    parts.put(part("turn_b", "p3", 0, 1, "y".repeat(40)));
    parts.dropTurn("turn_a");
    expect(parts.size()).toBe(1);
    expect(parts.heldChars()).toBe(40);
    parts.put(part("turn_c", "p4", 0, 1, JSON.stringify({ big: "z".repeat(50) })));
    expect(parts.take("turn_c", "p4")).toEqual({ ok: true, value: { big: "z".repeat(50) } });
    expect(parts.heldChars()).toBe(40);
    expect(codeOf(() => parts.take("turn_a", "p2"))).toBe("INVALID_PARAMS");
  });
});
