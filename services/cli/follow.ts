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
import { createHumanPrinter } from "./human-printer.ts";
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

/**
 * Prints what arrives on `sub` until the followed work ends (its exit code), the deadline passes
 * (TIMEOUT, retriable) or the person presses Ctrl-C at a question (130).
 */
export async function follow(run: Run, sub: EventSubscription, spec: FollowSpec): Promise<number> {
  const { deps } = run;
  const json = spec.json;
  const printer = createHumanPrinter({
    paint: painter(colourEnabled(deps.stdoutIsTTY, deps.env)),
    sessionLabels: spec.sessionLabels === true,
  });
  const pending = new Map<string, SessionEvent<"permission.requested">>();
  let asker: PermissionAsker | null = null;
  let stopped = false;
  if (interactive(run, json)) {
    const b = await bus(run);
    asker = createPermissionAsker({ stdin: deps.stdin!, write: deps.stdout }, async (requestId, decision) => {
      try {
        const r = await b.call("permissions.resolve", { requestId, decision });
        write(printer.note([`answered ${r.requestId}: ${r.decision ?? r.status}`]));
      } catch (err) {
        const e = err as { code?: string; message?: string };
        write(printer.note([`error ${e.code ?? "INTERNAL"}: ${e.message ?? String(err)}`], "red"));
      }
    });
    void asker.interrupted.then(() => {
      stopped = true;
      sub.close();
    });
  }
  const write = (text: string) => {
    if (text === "") return;
    if (asker) asker.write(text);
    else deps.stdout(text);
    lastShownAt = Date.now();
  };
  const notice = (code: string, message: string) => {
    if (json) deps.stderr(`${JSON.stringify({ notice: code, message })}\n`);
    else write(printer.note([message], "yellow"));
  };

  const started = Date.now();
  const deadline = spec.ms === null ? Number.POSITIVE_INFINITY : started + spec.ms;
  let state: FollowState | null = spec.target ? startFollow(spec.target) : null;
  let claimed = false;
  let claimNoticeAt: number | null = spec.target ? started + (deps.claimNoticeMs ?? CLAIM_NOTICE_MS) : null;
  const waitMs = deps.waitNoticeMs ?? WAIT_NOTICE_MS;
  let lastShownAt = started;
  let lastEventAt = started;

  const what = (): string => {
    const t = state?.target;
    if (!t) return "events";
    return t.turnId ?? `the execution of ${(t as { proposalId: string }).proposalId}`;
  };

  /** What the follower is waiting for, in a sentence. */
  const waitingFor = (): string | null => {
    const first = [...pending.values()][0];
    if (first)
      return `waiting: permission for ${first.tool} (${first.requestId}) is unanswered until ${first.deadline}; answer: pihost permissions allow ${first.requestId} (or allow-session, deny)`;
    if (!state) return null;
    const running = state.target.turnId ? `turn ${state.target.turnId}` : what();
    return `waiting: ${running} is running; nothing new for ${Math.round((Date.now() - lastEventAt) / 1000)} s (${Math.round((Date.now() - started) / 1000)} s in all)`;
  };

  try {
    for (;;) {
      const wakeAt = Math.min(deadline, claimNoticeAt ?? Number.POSITIVE_INFINITY, lastShownAt + waitMs);
      const item: FeedItem | null = await sub.next(wakeAt);
      if (stopped) return EXIT.STOPPED;
      if (item === null) {
        const now = Date.now();
        if (now >= deadline) {
          if (state === null) return EXIT.OK; // a watch that was asked to stop after a while
          throw new CliError(
            "TIMEOUT",
            `${state?.target.kind === "turn" ? `turn ${what()}` : what()} did not finish within ${Math.round((spec.ms ?? 0) / 1000)} s; it keeps running on the host (see pihost session show, pihost watch)`,
          );
        }
        if (claimNoticeAt !== null && now >= claimNoticeAt) {
          claimNoticeAt = null;
          if (!claimed)
            notice(
              "NO_WORKER_CLAIMED",
              `waiting: no worker has claimed ${what()} yet; is an agent worker running that serves this session's model? (pihost models)`,
            );
          continue;
        }
        if (now >= lastShownAt + waitMs) {
          const w = waitingFor();
          if (w) notice("WAITING", w);
          else lastShownAt = now;
        }
        continue;
      }
      if (item.type !== "delta") {
        lastEventAt = Date.now();
        track(item);
      }
      let show = true;
      let done: { exitCode: number; proposal?: Parameters<typeof approvalHintLines>[0] } | null = null;
      if (state !== null && item.type !== "delta") {
        const step = followEvent(state, item);
        state = step.state;
        show = step.show;
        done = step.done;
      } else if (state !== null && item.type === "delta") {
        show = state.target.turnId !== null && item.turnId === state.target.turnId;
      }
      if (show) {
        if (json) {
          if (item.type !== "delta") outJson(run, item);
        } else write(printer.item(item));
      }
      if (done) {
        if (done.proposal && !json) write(printer.note(approvalHintLines(done.proposal), "cyan"));
        return done.exitCode;
      }
    }
  } finally {
    asker?.close();
  }

  function track(e: SessionEvent): void {
    if (
      e.type === "turn.claimed" &&
      (state === null || state.target.turnId === null || e.turnId === state.target.turnId)
    )
      claimed = true;
    if (e.type === "permission.requested") {
      const p = e;
      if (state === null || state.target.turnId === null || p.turnId === state.target.turnId) {
        pending.set(p.requestId, p);
        // Printed first (by the caller of track), then asked.
        queueMicrotask(() => asker?.ask(p));
      }
    }
    if (e.type === "permission.resolved") {
      const id = e.requestId;
      pending.delete(id);
      asker?.settled(id);
    }
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
