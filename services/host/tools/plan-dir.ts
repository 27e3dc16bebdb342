// PLACEHOLDER (lead): the sealed `.pi` / `.pi/plan` of a workspace. Replaced by the plan-dir work.
import { promises as fs } from "node:fs";
import path from "node:path";
import { sandboxUnavailable } from "./sandbox-user.ts";

/** Ensures `<workspace>/.pi/plan` exists as the host's folder; returns `<workspace>/.pi` to bind read-only. */
export async function sealedPiDir(workspace: string): Promise<string> {
  const pi = path.join(workspace, ".pi");
  const plan = path.join(pi, "plan");
  await fs.mkdir(plan, { recursive: true, mode: 0o755 });
  for (const dir of [pi, plan]) {
    const st = await fs.lstat(dir);
    if (!st.isDirectory() || (await fs.realpath(dir)) !== dir)
      throw sandboxUnavailable(`${path.relative(workspace, dir)} in the workspace is not a plain folder`, {
        path: dir,
      });
  }
  return pi;
}
