// The cron rules as tables of cases: explicit IANA zones only, five fields only, and the catch-up
// rule (the newest occurrence within the grace period runs; every other due one is missed).
import { describe, expect, it } from "vitest";
import { AppError } from "../protocol/app-error.ts";
import { checkSchedule, checkTimeZone, nextOccurrence, planCatchUp } from "./cron-schedule.ts";

const code = (fn: () => void) => {
  try {
    fn();
    return null;
  } catch (err) {
    return err instanceof AppError ? err.code : String(err);
  }
};
const t = (iso: string) => Date.parse(iso);
const HOUR = 3600_000;

describe("checkTimeZone / checkSchedule", () => {
  it.each(["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5"])("accepts %s", (zone) => {
    expect(code(() => checkTimeZone(zone))).toBeNull();
  });

  it.each(["", "Mars/Olympus", "+01:00", "Europe/Berlin ", "../etc", "Europe//Berlin"])(
    "refuses %j",
    (zone) => {
      expect(code(() => checkTimeZone(zone))).toBe("INVALID_PARAMS");
    },
  );

  it.each([
    ["0 9 * * 1-5", null],
    ["*/15 * * * *", null],
    ["0 0 29 2 *", null],
    ["* * * *", "INVALID_PARAMS"],
    ["0 */5 * * * *", "INVALID_PARAMS"],
    ["61 * * * *", "INVALID_PARAMS"],
    ["0 0 30 2 *", "INVALID_PARAMS"],
    ["@daily", "INVALID_PARAMS"],
    ["not a cron", "INVALID_PARAMS"],
  ])("cron %j -> %s", (cron, expected) => {
    expect(code(() => checkSchedule(cron, "UTC"))).toBe(expected);
  });
});

describe("nextOccurrence", () => {
  it("is strictly after the given time and follows the zone's offset across DST", () => {
    expect(nextOccurrence("0 9 * * *", "Europe/Berlin", t("2025-01-10T08:00:00Z"))).toBe(
      t("2025-01-11T08:00:00Z"),
    );
    expect(nextOccurrence("0 9 * * *", "Europe/Berlin", t("2025-01-10T07:00:00Z"))).toBe(
      t("2025-01-10T08:00:00Z"),
    );
    expect(nextOccurrence("0 9 * * *", "Europe/Berlin", t("2025-07-10T06:00:00Z"))).toBe(
      t("2025-07-10T07:00:00Z"),
    );
    expect(nextOccurrence("0 9 * * *", "UTC", t("2025-07-10T06:00:00Z"))).toBe(t("2025-07-10T09:00:00Z"));
  });
});

describe("planCatchUp", () => {
  const base = { cron: "0 * * * *", timezone: "UTC", graceMs: 60_000 };
  const first = t("2025-03-01T10:00:00Z");

  it.each([
    ["on time", first, first, [], first + HOUR],
    ["late within the grace period", first + 59_000, first, [], first + HOUR],
    ["just past the grace period", first + 61_000, null, [first], first + HOUR],
    [
      "two hours and five minutes late",
      first + 2 * HOUR + 5 * 60_000,
      null,
      [first, first + HOUR, first + 2 * HOUR],
      first + 3 * HOUR,
    ],
    [
      "an older one passed over by a newer one within grace",
      first + HOUR + 10_000,
      first + HOUR,
      [first],
      first + 2 * HOUR,
    ],
  ] as const)("%s", (_name, now, run, missed, next) => {
    const plan = planCatchUp({ ...base, firstDue: first, now });
    expect(plan).toEqual({ run, missed, missedTotal: missed.length, truncated: false, next });
  });

  it("bounds the scan and the recorded misses after a long outage, and still finds the newest", () => {
    const outage = first + 400 * 24 * HOUR;
    const long = { ...base, firstDue: first, maxMissed: 5, scanLimit: 50 };
    const late = planCatchUp({ ...long, now: outage + 30 * 60_000 });
    expect(late).toMatchObject({ run: null, truncated: true, missedTotal: 51, next: outage + HOUR });
    expect(late.missed).toEqual([0, 1, 2, 3, 4].map((i) => first + i * HOUR));
    const onTime = planCatchUp({ ...long, now: outage + 30_000 });
    expect(onTime).toMatchObject({ run: outage, truncated: true, missedTotal: 50, next: outage + HOUR });
  });
});
