import { describe, expect, it } from "vitest";
import { stateValueString } from "./machine-state.ts";

describe("stateValueString", () => {
  it.each([
    ["idle", "idle"],
    [{ running: "waiting" }, "running.waiting"],
    [{ running: { tool: "asking" } }, "running.tool.asking"],
    [{ a: "x", b: { c: "y" } }, "a.x,b.c.y"],
    [{ done: undefined }, "done"],
  ])("%j is %s", (value, text) => {
    expect(stateValueString(value as never)).toBe(text);
  });
});
