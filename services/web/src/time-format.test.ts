import { describe, expect, it } from "vitest";
import { absoluteTime, countdown } from "./time-format.ts";

describe("countdown", () => {
  const deadline = "2026-01-01T10:30:00.000Z";
  const at = (iso: string) => Date.parse(iso);
  it.each([
    ["2026-01-01T10:00:00.000Z", "30:00 left"],
    ["2026-01-01T10:29:59.500Z", "0:01 left"],
    ["2026-01-01T08:29:58.000Z", "2:00:02 left"],
    ["2026-01-01T10:30:00.000Z", "expired"],
    ["2026-01-01T11:00:00.000Z", "expired"],
  ])("at %s: %s", (now, want) => {
    expect(countdown(deadline, at(now))).toBe(want);
  });
  it("an unreadable deadline says so", () => {
    expect(countdown("soon", 0)).toBe("unknown deadline");
  });
  it("the absolute time is ISO (UTC) and local", () => {
    expect(absoluteTime(deadline).iso).toBe(deadline);
    expect(absoluteTime(deadline).local.length).toBeGreaterThan(0);
  });
});
