// What the host hears from a started sandbox (sandbox.ts): bwrap's JSON status on fd 3 (the first
// pid), the starter's report on fd 4 that the command runs, and the end of the output streams.
import type { ChildProcess } from "node:child_process";
import type { Readable } from "node:stream";

/** Resolves when every stream reached its end (every writer in the sandbox is gone). */
export function outputEndedOf(streams: readonly Readable[]): Promise<void> {
  return Promise.all(
    streams.map(
      (stream) =>
        new Promise<void>((resolve) => {
          stream.on("error", () => resolve());
          stream.on("end", () => resolve());
          stream.on("close", () => resolve());
        }),
    ),
  ).then(() => {});
}

/** Calls `onPid` once with the sandbox's first process as bwrap reports it on `status`. */
export function watchFirstPid(status: NodeJS.ReadableStream, onPid: (pid: number) => void): void {
  let pid: number | null = null;
  // bwrap writes one JSON object per line; only complete lines are read (a pid cut in half is not a pid).
  let statusText = "";
  status.setEncoding("utf8");
  status.on("data", (d: string) => {
    statusText += d;
    let nl = statusText.indexOf("\n");
    while (nl >= 0) {
      const line = statusText.slice(0, nl);
      statusText = statusText.slice(nl + 1);
      nl = statusText.indexOf("\n");
      let msg: { "child-pid"?: unknown };
      try {
        msg = JSON.parse(line);
      } catch {
        continue;
      }
      if (pid === null && Number.isInteger(msg["child-pid"]) && (msg["child-pid"] as number) > 0) {
        pid = msg["child-pid"] as number;
        onPid(pid);
      }
    }
  });
  status.on("error", () => {});
}

/** Resolves true once the starter reports on `ready` that the command runs, false if it never did. */
export function startedOf(child: ChildProcess, ready: NodeJS.ReadableStream): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    let buf = "";
    ready.setEncoding("utf8");
    ready.on("data", (d: string) => {
      buf += d;
      if (buf.startsWith("started")) resolve(true);
    });
    ready.on("error", () => resolve(false));
    ready.on("end", () => resolve(buf.startsWith("started")));
    child.on("error", () => resolve(false));
    child.on("close", () => resolve(buf.startsWith("started")));
  });
}
