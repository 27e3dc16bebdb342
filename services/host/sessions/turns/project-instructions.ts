// The project's own instructions: `AGENTS.md` at the workspace root, read at each claim through the
// tool runner's Read, i.e. by the session's sandboxed file helper as the sandbox user, confined to the
// workspace (a link out of it is refused there). Anything unreadable is simply no instructions.
// Whether the name exists at all is asked first without following it (an lstat of the one path in
// the recorded root: metadata, never content), so a workspace without one starts no file helper.
import { lstat } from "node:fs/promises";
import path from "node:path";
import type { ToolRunner } from "../../tools/tool-runner.ts";

export const INSTRUCTIONS_FILE = "AGENTS.md";

/** The text of the workspace's AGENTS.md, or null: missing, unreadable, outside, binary or too slow. */
export type ReadProjectInstructions = (workspaceRoot: string, sessionId: string) => Promise<string | null>;

export interface ProjectInstructionsDeps {
  runner: Pick<ToolRunner, "run">;
  /** A read still waiting after this long (the workspace lock held by a long Bash) is none (default 5 s). */
  timeoutMs?: number;
}

/** Never rejects: a claim must not fail because of the project's instructions. */
export function createProjectInstructions(deps: ProjectInstructionsDeps): ReadProjectInstructions {
  const timeoutMs = deps.timeoutMs ?? 5000;
  return async (workspaceRoot, sessionId) => {
    if (!workspaceRoot) return null;
    const present = await lstat(path.join(workspaceRoot, INSTRUCTIONS_FILE)).then(
      () => true,
      () => false,
    );
    if (!present) return null;
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => {
      timer = setTimeout(() => {
        abort.abort();
        resolve(null);
      }, timeoutMs);
      timer.unref();
    });
    const read = deps.runner
      .run("Read", { path: INSTRUCTIONS_FILE }, { workspaceRoot, sessionId, signal: abort.signal })
      .then((r) => (r.isError ? null : r.content.map((c) => c.text).join("\n")))
      .catch(() => null);
    try {
      return await Promise.race([read, late]);
    } finally {
      clearTimeout(timer);
    }
  };
}
