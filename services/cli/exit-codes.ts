// The CLI's exit codes, one class each, stable for scripts (listed in `pihost --help` and
// docs/cli.md). Only this file spells the numbers.
export const EXIT = {
  /** Done as asked (a followed turn completed, or parked on a plan awaiting approval). */
  OK: 0,
  /** Refused: the host (or the CLI) said no with a non-retriable code, or the followed turn failed. */
  REFUSED: 1,
  /** The command line itself is wrong; nothing was sent. */
  USAGE: 2,
  /** A retriable failure: NATS or the host unreachable, a retriable host code, a local TIMEOUT. */
  RETRIABLE: 3,
  /** The followed work was interrupted: aborted, fenced by a restart, or its approval expired. */
  INTERRUPTED: 4,
  /** Stopped by the person (Ctrl-C), as shells report a SIGINT; nothing left pending was answered. */
  STOPPED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The help text's paragraph (one place). */
export const EXIT_CODES_HELP = [
  "Exit codes:",
  "  0  ok",
  "  1  refused (a non-retriable error code), or the followed turn failed",
  "  2  usage: the command line is wrong, nothing was sent",
  "  3  retriable failure: NATS or the host unreachable, a retriable code, a TIMEOUT while following",
  "  4  interrupted: the followed turn was aborted or fenced by a restart, or the plan expired",
  "  130  stopped with Ctrl-C (a question left unanswered stays pending on the host)",
].join("\n");
