// `pihost prompt` and `pihost abort`: send a prompt and follow its turn, or abort what runs.
import type { Command } from "commander";
import { timeoutMs } from "../cli-params.ts";
import { bus, DEFAULT_TIMEOUT_SECONDS, isJson, out, outJson, type Run } from "../cli-run.ts";
import { follow } from "../follow.ts";
import { formatAbort } from "../view-format.ts";

export function addPromptCommands(program: Command, run: Run): void {
  program
    .command("prompt")
    .description("send a prompt and follow the turn until it ends or a plan awaits approval")
    .argument("<sessionId>")
    .argument("<text>")
    .option("--no-wait", "print the turn id and return at once")
    .option("--timeout <seconds>", "how long to follow the turn", DEFAULT_TIMEOUT_SECONDS)
    .option("--idempotency-key <key>", "a retried prompt with the same key returns the first reply")
    .action(async (sessionId: string, text: string, opts: PromptCli, cmd: Command) => {
      const ms = timeoutMs(opts.timeout);
      const json = isJson(cmd);
      const b = await bus(run);
      const params = {
        sessionId,
        text,
        ...(opts.idempotencyKey ? { idempotencyKey: opts.idempotencyKey } : {}),
      };
      if (!opts.wait) {
        const r = await b.call("session.prompt", params);
        if (json) outJson(run, r);
        else out(run, [`turn ${r.turnId}`]);
        return;
      }
      // Subscribe first: the turn's first events may be published before the reply arrives.
      const sub = await b.subscribe(sessionId);
      try {
        const r = await b.call("session.prompt", params);
        if (json) outJson(run, r);
        run.exitCode = await follow(run, sub, { target: { kind: "turn", turnId: r.turnId }, ms, json });
      } finally {
        sub.close();
      }
    });
  program
    .command("abort")
    .description("abort the session's running turn, pending approval or execution")
    .argument("<sessionId>")
    .action(async (sessionId: string, _opts: unknown, cmd: Command) => {
      const r = await (await bus(run)).call("session.abort", { sessionId });
      if (isJson(cmd)) outJson(run, r);
      else out(run, formatAbort(r));
    });
}

interface PromptCli {
  wait: boolean;
  timeout: string;
  idempotencyKey?: string;
}
