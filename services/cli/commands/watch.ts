// `pihost watch [SESSION]`: every event of one session, or of every session the caller may read, as
// it happens, until Ctrl-C; after a disconnect it catches up without gaps or repeats (cli-bus.ts).
// It starts by saying what already waits for a person (permission prompts, plans awaiting approval).
import type { Command } from "commander";
import { AppError } from "../../protocol/app-error.ts";
import { bus, isJson, type Run } from "../cli-run.ts";
import { follow, waitingNow } from "../follow.ts";
import { timeoutMs } from "../cli-params.ts";
import { colourEnabled, painter, printable } from "../terminal-text.ts";

export function addWatchCommand(program: Command, run: Run): void {
  program
    .command("watch")
    .description(
      "stream the events of a session (or of all your sessions) until Ctrl-C; permission prompts are asked on a terminal",
    )
    .argument("[sessionId]", "one session (default: every session you own or approve)")
    .option("--for <seconds>", "stop after this long (exit 0); default: until Ctrl-C")
    .action(async (sessionId: string | undefined, opts: { for?: string }, cmd: Command) => {
      const json = isJson(cmd);
      const ms = opts.for === undefined ? null : timeoutMs(opts.for, "--for");
      const b = await bus(run);
      // Subscribed before the pending lists are read, so nothing falls between the two.
      const sub = await b.subscribe(sessionId ?? null);
      try {
        // A host that cannot answer now (restarting, draining) does not end a watch: the events
        // still arrive, and a refusal that is final (SESSION_NOT_FOUND, FORBIDDEN) does.
        const unlessRetriable = async <T>(what: string, call: () => Promise<T>): Promise<T | null> => {
          try {
            return await call();
          } catch (err) {
            if (!(err instanceof AppError) || !err.retriable) throw err;
            run.deps.stderr(`notice ${err.code}: could not ${what} (${err.message}); following the events\n`);
            return null;
          }
        };
        if (sessionId) await unlessRetriable("check the session", () => b.call("session.get", { sessionId }));
        if (!json) {
          const paint = painter(colourEnabled(run.deps.stdoutIsTTY, run.deps.env));
          const waiting =
            (await unlessRetriable("list what waits for a person", () =>
              waitingNow(run, sessionId ?? null),
            )) ?? [];
          run.deps.stdout(
            `${paint("dim", `watching ${sessionId ? `session ${sessionId}` : "all your sessions"} (Ctrl-C to stop)`)}\n`,
          );
          for (const [i, line] of waiting.entries())
            run.deps.stdout(
              `${i === 0 || !line.startsWith(" ") ? paint("alert", printable(line)) : printable(line)}\n`,
            );
        }
        run.exitCode = await follow(run, sub, {
          target: null,
          ms,
          json,
          sessionLabels: sessionId === undefined,
        });
      } finally {
        sub.close();
      }
    });
}
