// The host clock as the actors' clock: timers follow the host's time, and moving the clock fires
// what is due at once (the test clock, docs/protocol.md "Test hooks").
import { describe, expect, it } from "vitest";
import { createClock } from "./clock.ts";

const tick = () => new Promise((r) => setTimeout(r, 5));

describe("host clock", () => {
  it("fires a timer when the clock is advanced past its due time, not before", async () => {
    const clock = createClock();
    const fired: string[] = [];
    clock.setTimeout(() => fired.push("30min"), 30 * 60 * 1000);
    clock.setTimeout(() => fired.push("1h"), 60 * 60 * 1000);
    clock.advance(29 * 60 * 1000);
    await tick();
    expect(fired).toEqual([]);
    clock.advance(60 * 1000);
    await tick();
    expect(fired).toEqual(["30min"]);
    clock.set(clock.now() + 60 * 60 * 1000);
    await tick();
    expect(fired).toEqual(["30min", "1h"]);
  });

  it("cleared timers never fire; short timers fire in real time", async () => {
    const clock = createClock();
    const fired: string[] = [];
    const h = clock.setTimeout(() => fired.push("cleared"), 10);
    clock.clearTimeout(h);
    clock.setTimeout(() => fired.push("soon"), 10);
    await new Promise((r) => setTimeout(r, 40));
    expect(fired).toEqual(["soon"]);
  });
});
