// Questions asked on a terminal: a permission prompt answered inline while a command follows a turn,
// and the permission mode of `plans approve`. Neither has a default that does anything: Enter asks
// again (or, for the mode, takes the preselected Ask, which is shown), end of input leaves the
// question unanswered, Ctrl-C stops the command (exit 130). Only used when stdin and stdout are TTYs.
import { createInterface, type Interface } from "node:readline";
import { Writable } from "node:stream";
import type { SessionEvent } from "../protocol/events.ts";
import type { PermissionDecision } from "../protocol/permission-schemas.ts";

export interface TerminalIo {
  stdin: NodeJS.ReadableStream;
  /** Writes to the terminal (stdout). */
  write(text: string): void;
}

function terminalOutput(io: TerminalIo): Writable {
  return new Writable({
    write(chunk, _enc, done) {
      io.write(chunk.toString());
      done();
    },
  });
}

function openInterface(io: TerminalIo): Interface {
  return createInterface({ input: io.stdin, output: terminalOutput(io), terminal: true });
}

/** The decision typed at a permission question, "later" (leave it pending), or null (ask again). */
export function parsePermissionAnswer(text: string): PermissionDecision | "later" | null {
  switch (text.trim().toLowerCase()) {
    case "a":
    case "allow":
    case "allow-once":
      return "allow-once";
    case "s":
    case "allow-session":
    case "session":
      return "allow-session";
    case "d":
    case "deny":
      return "deny";
    case "l":
    case "later":
      return "later";
    default:
      return null;
  }
}

export const PERMISSION_QUESTION =
  "answer [a] allow once, [s] allow for the session, [d] deny, [l] later (no default): ";

export interface PermissionAsker {
  /** Asks about a prompt, after the ones already waiting. */
  ask(e: SessionEvent<"permission.requested">): void;
  /** The prompt was answered (here or elsewhere) or timed out: stop asking about it. */
  settled(requestId: string): void;
  /** Writes output while a question may be on screen, and shows the question again after it. */
  write(text: string): void;
  /** Resolves when the person pressed Ctrl-C. */
  readonly interrupted: Promise<void>;
  close(): void;
}

/**
 * Asks each permission prompt in turn and sends the answer with `answer`; what `answer` reports
 * (the recorded result or an error such as PERMISSION_TIMEOUT) is printed by it.
 */
export function createPermissionAsker(
  io: TerminalIo,
  answer: (requestId: string, decision: PermissionDecision) => Promise<void>,
): PermissionAsker {
  const rl = openInterface(io);
  const queue: Array<SessionEvent<"permission.requested">> = [];
  let current: { requestId: string; abort: AbortController } | null = null;
  let ended = false;
  let onInterrupt: () => void = () => {};
  const interrupted = new Promise<void>((resolve) => {
    onInterrupt = resolve;
  });
  rl.on("SIGINT", () => {
    if (current) io.write(`\nleft pending: ${current.requestId}\n`);
    ended = true;
    onInterrupt();
  });
  rl.on("close", () => {
    // End of input: nothing more can be answered here; what is waiting stays pending on the host.
    if (!ended && current) io.write(`\nleft pending (end of input): ${current.requestId}\n`);
    ended = true;
    current?.abort.abort();
  });

  function next(): void {
    if (ended || current !== null) return;
    const e = queue.shift();
    if (!e) return;
    const abort = new AbortController();
    current = { requestId: e.requestId, abort };
    const askOnce = () => {
      rl.question(`${e.requestId} ${PERMISSION_QUESTION}`, { signal: abort.signal }, (text) => {
        const decision = parsePermissionAnswer(text);
        if (decision === null) {
          io.write("type a, s, d or l\n");
          askOnce();
          return;
        }
        const done = () => {
          if (current?.requestId === e.requestId) current = null;
          next();
        };
        if (decision === "later") {
          io.write(`left pending: ${e.requestId}\n`);
          done();
          return;
        }
        void answer(e.requestId, decision).finally(done);
      });
    };
    askOnce();
  }

  return {
    ask(e) {
      if (ended) return;
      queue.push(e);
      next();
    },
    settled(requestId) {
      const i = queue.findIndex((q) => q.requestId === requestId);
      if (i >= 0) queue.splice(i, 1);
      if (current?.requestId === requestId) {
        current.abort.abort();
        current = null;
        io.write("\n");
        next();
      }
    },
    write(text) {
      if (current === null || ended) {
        io.write(text);
        return;
      }
      // Above the question: clear its line, write, then show it again with what was typed so far.
      io.write(`\r\u001b[2K${text}`);
      rl.prompt(true);
    },
    interrupted,
    close() {
      ended = true;
      current?.abort.abort();
      rl.close();
    },
  };
}

/**
 * The permission mode for an approval, asked with `modes[0]` (Ask) preselected: Enter takes it,
 * a number or a name picks another. Null when input ends or Ctrl-C is pressed: nothing is approved.
 */
export function askMode(
  io: TerminalIo,
  modes: readonly string[],
  describe: (mode: string) => string,
): Promise<{ mode: string } | { stopped: "eof" | "interrupt" }> {
  const rl = openInterface(io);
  io.write("permission mode for the execution:\n");
  modes.forEach((m, i) => {
    io.write(`  ${i + 1}) ${m.padEnd(13)}${describe(m)}${i === 0 ? "  (preselected)" : ""}\n`);
  });
  return new Promise((resolve) => {
    let settled = false;
    const finish = (r: { mode: string } | { stopped: "eof" | "interrupt" }) => {
      if (settled) return;
      settled = true;
      rl.close();
      resolve(r);
    };
    rl.on("SIGINT", () => finish({ stopped: "interrupt" }));
    rl.on("close", () => finish({ stopped: "eof" }));
    const ask = () =>
      rl.question(`mode [1-${modes.length}, Enter = ${modes[0]}]: `, (text) => {
        const t = text.trim();
        if (t === "") return finish({ mode: modes[0]! });
        const byNumber = /^\d+$/.test(t) ? modes[Number(t) - 1] : undefined;
        const byName = modes.find((m) => m === t);
        const mode = byNumber ?? byName;
        if (mode) return finish({ mode });
        io.write(`choose 1-${modes.length} or one of ${modes.join(", ")}\n`);
        ask();
      });
    ask();
  });
}
