// Following: what `prompt`, `plans approve --wait` and `watch` print while events arrive, and when
// they stop. One loop for all three (docs/cli.md "Following"): events through the turn follower (or
// every event, for watch), live text and Bash output as they stream, a plain notice when no worker
// claims the followed turn, a reminder while a person is needed or nothing moves, and on a terminal
// the permission question asked inline.
import type { SessionEvent } from "../protocol/events.ts";
import type { EventSubscription } from "./cli-bus.ts";
import { CliError } from "./cli-error.ts";
import { bus, outJson, type Run } from "./cli-run.ts";
import { approvalHintLines } from "./event-format.ts";
import { EXIT } from "./exit-codes.ts";
import { createHumanPrinter, type HumanPrinter } from "./human-printer.ts";
import { walkList } from "../protocol/page-walk.ts";
import type { FeedItem } from "../protocol/session-feed.ts";
import { colourEnabled, painter } from "./terminal-text.ts";
import { createPermissionAsker, type PermissionAsker } from "./tty-prompts.ts";
import { type FollowState, type FollowTarget, followEvent, startFollow } from "./turn-follower.ts";

/** How long a follower waits for a worker to claim the followed turn before it says none has. */
export const CLAIM_NOTICE_MS = 5_000;
/** How long nothing may happen while following before the follower says what it waits for. */
export const WAIT_NOTICE_MS = 30_000;

export interface FollowSpec {
  /** What to follow to its end; null: every event until stopped (`pihost watch`). */
  target: FollowTarget | null;
  /** Give up after this long (a local TIMEOUT); null: no limit. */
  ms: number | null;
  json: boolean;
  /** Prefix lines with their session (a watch of every session). */
  sessionLabels?: boolean;
}

/** Whether this run may ask questions on a terminal (human output, stdin and stdout TTYs). */
export function interactive(run: Run, json: boolean): boolean {
  return (
    !json && run.deps.stdin !== undefined && run.deps.stdinIsTTY === true && run.deps.stdoutIsTTY === true
  );
}

/** One follow's state and dependencies, which each step below takes explicitly. */
interface Follower {
  run: Run;
  sub: EventSubscription;
  spec: FollowSpec;
  json: boolean;
  printer: HumanPrinter;
  /** Permission requests of the followed work not yet resolved. */
  pending: Map<string, SessionEvent<"permission.requested">>;
  asker: PermissionAsker | null;
  stopped: boolean;
  started: number;
  deadline: number;
  state: FollowState | null;
  claimed: boolean;
  claimNoticeAt: number | null;
  waitMs: number;
  lastShownAt: number;
  lastEventAt: number;
}

/**
 * Prints what arrives on `sub` until the followed work ends (its exit code), the deadline passes
 * (TIMEOUT, retriable) or the person presses Ctrl-C at a question (130).
 */
export async function follow(run: Run, sub: EventSubscription, spec: FollowSpec): Promise<number> {
  const f = newFollower(run, sub, spec);
  if (interactive(run, f.json)) await attachAsker(f);
  startClock(f, Date.now());
  try {
    for (;;) {
      const wakeAt = Math.min(
        f.deadline,
        f.claimNoticeAt ?? Number.POSITIVE_INFINITY,
        f.lastShownAt + f.waitMs,
      );
      const item: FeedItem | null = await sub.next(wakeAt);
      if (f.stopped) return EXIT.STOPPED;
      const exitCode = item === null ? onQuiet(f) : onItem(f, item);
      if (exitCode !== null) return exitCode;
    }
  } finally {
    f.asker?.close();
  }
}

function newFollower(run: Run, sub: EventSubscription, spec: FollowSpec): Follower {
  const { deps } = run;
  const f: Follower = {
    run,
    sub,
    spec,
    json: spec.json,
    printer: createHumanPrinter({
      paint: painter(colourEnabled(deps.stdoutIsTTY, deps.env)),
      sessionLabels: spec.sessionLabels === true,
    }),
    pending: new Map(),
    asker: null,
    stopped: false,
    started: 0,
    deadline: 0,
    state: spec.target ? startFollow(spec.target) : null,
    claimed: false,
    claimNoticeAt: null,
    waitMs: deps.waitNoticeMs ?? WAIT_NOTICE_MS,
    lastShownAt: 0,
    lastEventAt: 0,
  };
  startClock(f, Date.now());
  return f;
}

/** The follow's deadline and notices count from `started` (once the asker, if any, is ready). */
function startClock(f: Follower, started: number): void {
  const { deps } = f.run;
  f.started = started;
  f.deadline = f.spec.ms === null ? Number.POSITIVE_INFINITY : started + f.spec.ms;
  f.claimNoticeAt = f.spec.target ? started + (deps.claimNoticeMs ?? CLAIM_NOTICE_MS) : null;
  f.lastShownAt = started;
  f.lastEventAt = started;
}

/** On a terminal, permission questions are asked inline and answered with permissions.resolve. */
async function attachAsker(f: Follower): Promise<void> {
  const { deps } = f.run;
  const b = await bus(f.run);
  const asker = createPermissionAsker(
    { stdin: deps.stdin!, write: deps.stdout },
    async (requestId, decision) => {
      try {
        const r = await b.call("permissions.resolve", { requestId, decision });
        write(f, f.printer.note([`answered ${r.requestId}: ${r.decision ?? r.status}`]));
      } catch (err) {
        const e = err as { code?: string; message?: string };
        write(f, f.printer.note([`error ${e.code ?? "INTERNAL"}: ${e.message ?? String(err)}`], "red"));
      }
    },
  );
  f.asker = asker;
  void asker.interrupted.then(() => {
    f.stopped = true;
    f.sub.close();
  });
}

function write(f: Follower, text: string): void {
  if (text === "") return;
  if (f.asker) f.asker.write(text);
  else f.run.deps.stdout(text);
  f.lastShownAt = Date.now();
}

function notice(f: Follower, code: string, message: string): void {
  if (f.json) f.run.deps.stderr(`${JSON.stringify({ notice: code, message })}\n`);
  else write(f, f.printer.note([message], "yellow"));
}

function what(f: Follower): string {
  const t = f.state?.target;
  if (!t) return "events";
  return t.turnId ?? `the execution of ${(t as { proposalId: string }).proposalId}`;
}

/** What the follower is waiting for, in a sentence. */
function waitingFor(f: Follower): string | null {
  const first = [...f.pending.values()][0];
  if (first)
    return `waiting: permission for ${first.tool} (${first.requestId}) is unanswered until ${first.deadline}; answer: pihost permissions allow ${first.requestId} (or allow-session, deny)`;
  const state = f.state;
  if (!state) return null;
  const running = state.target.turnId ? `turn ${state.target.turnId}` : what(f);
  return `waiting: ${running} is running; nothing new for ${Math.round((Date.now() - f.lastEventAt) / 1000)} s (${Math.round((Date.now() - f.started) / 1000)} s in all)`;
}

/** Nothing arrived by the time the follower woke: the deadline, or a notice due. Null: go on. */
function onQuiet(f: Follower): number | null {
  const now = Date.now();
  if (now >= f.deadline) {
    if (f.state === null) return EXIT.OK; // a watch that was asked to stop after a while
    throw new CliError(
      "TIMEOUT",
      `${f.state?.target.kind === "turn" ? `turn ${what(f)}` : what(f)} did not finish within ${Math.round((f.spec.ms ?? 0) / 1000)} s; it keeps running on the host (see pihost session show, pihost watch)`,
    );
  }
  if (f.claimNoticeAt !== null && now >= f.claimNoticeAt) {
    f.claimNoticeAt = null;
    if (!f.claimed)
      notice(
        f,
        "NO_WORKER_CLAIMED",
        `waiting: no worker has claimed ${what(f)} yet; is an agent worker running that serves this session's model? (pihost models)`,
      );
    return null;
  }
  if (now >= f.lastShownAt + f.waitMs) {
    const w = waitingFor(f);
    if (w) notice(f, "WAITING", w);
    else f.lastShownAt = now;
  }
  return null;
}

/** Shows `item` if the followed work's, and says the exit code once that work is done. Null: go on. */
function onItem(f: Follower, item: FeedItem): number | null {
  const { json } = f;
  if (item.type !== "delta") {
    f.lastEventAt = Date.now();
    track(f, item);
  }
  let show = true;
  let done: { exitCode: number; proposal?: Parameters<typeof approvalHintLines>[0] } | null = null;
  if (f.state !== null && item.type !== "delta") {
    const step = followEvent(f.state, item);
    f.state = step.state;
    show = step.show;
    done = step.done;
  } else if (f.state !== null && item.type === "delta") {
    show = f.state.target.turnId !== null && item.turnId === f.state.target.turnId;
  }
  if (show) {
    if (json) {
      if (item.type !== "delta") outJson(f.run, item);
    } else write(f, f.printer.item(item));
  }
  if (done) {
    if (done.proposal && !json) write(f, f.printer.note(approvalHintLines(done.proposal), "cyan"));
    return done.exitCode;
  }
  return null;
}

function track(f: Follower, e: SessionEvent): void {
  const state = f.state;
  if (
    e.type === "turn.claimed" &&
    (state === null || state.target.turnId === null || e.turnId === state.target.turnId)
  )
    f.claimed = true;
  if (e.type === "permission.requested") {
    const p = e;
    if (state === null || state.target.turnId === null || p.turnId === state.target.turnId) {
      f.pending.set(p.requestId, p);
      // Printed first (by the caller of track), then asked.
      queueMicrotask(() => f.asker?.ask(p));
    }
  }
  if (e.type === "permission.resolved") {
    const id = e.requestId;
    f.pending.delete(id);
    f.asker?.settled(id);
  }
}

/** Waiting prompts and plans a watch lists at its start at most, of each kind. */
const WAITING_SHOWN = 1_000;

/** Lines for prompts and plans already waiting when a watch starts: a person is needed now. */
export async function waitingNow(run: Run, sessionId: string | null): Promise<string[]> {
  const b = await bus(run);
  const scope = sessionId ? { sessionId } : {};
  const [perms, plans] = await Promise.all([
    walkList(b, "permissions.pending", scope, { maxRows: WAITING_SHOWN }),
    walkList(b, "plans.pending", scope, { maxRows: WAITING_SHOWN }),
  ]);
  const more =
    perms.next !== null || plans.next !== null
      ? [`more than ${WAITING_SHOWN} wait: pihost permissions pending, pihost plans pending list them all`]
      : [];
  return [
    ...more,
    ...perms.items.flatMap((q) => [
      `permission needed: ${q.tool} (${q.risk}) in session ${q.sessionId} until ${q.deadline}`,
      `  answer: pihost permissions allow ${q.requestId}   (or allow-session, deny)`,
    ]),
    ...plans.items.flatMap((p) => approvalHintLines(p)),
  ];
}
