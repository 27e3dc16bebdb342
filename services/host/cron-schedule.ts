// Cron schedules with an explicit IANA time zone (cron-parser), and the catch-up rule: of the
// occurrences that came due since the last claim, only the newest within the grace period runs;
// every other one is recorded as missed, never run late. No I/O and no clock of its own.
import { CronExpressionParser } from "cron-parser";
import { type Refusal, refusalError } from "../protocol/result.ts";

const ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/** The refusal (INVALID_PARAMS) of a zone that is not an IANA name this runtime knows; offsets too. */
export function timeZoneRefusal(timezone: string): Refusal | null {
  let known = ZONE_NAME.test(timezone);
  if (known) {
    try {
      new Intl.DateTimeFormat("en-US", { timeZone: timezone });
    } catch {
      known = false;
    }
  }
  if (known) return null;
  return {
    code: "INVALID_PARAMS",
    message: `timezone ${JSON.stringify(timezone)} is not a known IANA time zone`,
    details: { field: "timezone" },
  };
}

/** Throws timeZoneRefusal's refusal. */
export function checkTimeZone(timezone: string): void {
  const refusal = timeZoneRefusal(timezone);
  if (refusal) throw refusalError(refusal);
}

/**
 * The refusal (INVALID_PARAMS) of anything but five cron fields (minute hour day-of-month month
 * day-of-week) that occur at least once; seconds fields and unknown zones are refused too.
 */
export function scheduleRefusal(cron: string, timezone: string): Refusal | null {
  const zone = timeZoneRefusal(timezone);
  if (zone) return zone;
  const fields = cron.trim().split(/\s+/);
  let problem: string | null = fields.length === 5 ? null : "a cron schedule has exactly five fields";
  if (!problem) {
    try {
      CronExpressionParser.parse(cron.trim(), { tz: timezone, currentDate: new Date(0) }).next();
    } catch (cause) {
      problem = (cause as Error).message;
    }
  }
  if (!problem) return null;
  return {
    code: "INVALID_PARAMS",
    message: `cron ${JSON.stringify(cron)}: ${problem}`,
    details: { field: "cron" },
  };
}

/** Throws scheduleRefusal's refusal. */
export function checkSchedule(cron: string, timezone: string): void {
  const refusal = scheduleRefusal(cron, timezone);
  if (refusal) throw refusalError(refusal);
}

/** The first occurrence strictly after `afterMs`. */
export function nextOccurrence(cron: string, timezone: string, afterMs: number): number {
  return CronExpressionParser.parse(cron.trim(), { tz: timezone, currentDate: new Date(afterMs) })
    .next()
    .getTime();
}

export interface CatchUp {
  /** The occurrence to run now, if one is within the grace period. */
  run: number | null;
  /** Occurrences recorded as missed (oldest first), at most `maxMissed`. */
  missed: number[];
  /** How many due occurrences were passed over (missed ones beyond maxMissed included). */
  missedTotal: number;
  /** More than scanLimit occurrences were due: missedTotal is a lower bound. */
  truncated: boolean;
  /** The next occurrence after now: the task's new next_run_at. */
  next: number;
}

/**
 * Which due occurrences from `firstDue` (the task's next_run_at) up to `now` run and which are
 * missed. An occurrence is missed when it lies more than graceMs in the past, or when a newer one is
 * also due (a task never runs twice to catch up). At most `scanLimit` of them are enumerated; past
 * that (a long outage) the newest is found directly and missedTotal is a lower bound.
 */
export function planCatchUp(p: {
  cron: string;
  timezone: string;
  firstDue: number;
  now: number;
  graceMs: number;
  maxMissed?: number;
  scanLimit?: number;
}): CatchUp {
  const maxMissed = p.maxMissed ?? 100;
  const scanLimit = Math.max(p.scanLimit ?? 200, maxMissed);
  const parse = (at: number) =>
    CronExpressionParser.parse(p.cron.trim(), { tz: p.timezone, currentDate: new Date(at) });
  const due: number[] = [];
  const after = parse(p.firstDue);
  let t = p.firstDue;
  while (t <= p.now && due.length < scanLimit) {
    due.push(t);
    t = after.next().getTime();
  }
  const truncated = t <= p.now;
  let newest = due.at(-1);
  if (truncated) {
    // The latest occurrence at or before now, without walking the whole outage.
    newest = parse(p.now + 1)
      .prev()
      .getTime();
    due.push(newest);
    t = nextOccurrence(p.cron, p.timezone, p.now);
  }
  const run = newest !== undefined && p.now - newest <= p.graceMs ? newest : null;
  const passed = run === null ? due : due.slice(0, -1);
  return {
    run,
    missed: passed.slice(0, maxMissed),
    missedTotal: passed.length,
    truncated,
    next: t,
  };
}
