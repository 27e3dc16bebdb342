// Which workspace root a person may give a project (docs/security.md "Workspace boundaries"): an
// existing directory, by its real path, inside a folder granted to them (workspace-grants.ts) under a
// configured root, never a configured root itself. project-store.ts checks the overlap with other
// projects' roots.
import { promises as fs } from "node:fs";
import path from "node:path";
import { ok, refuse, type Result } from "../../protocol/result.ts";
import { foldersFor, isUnder, type WorkspaceAccess } from "./workspace-grants.ts";

/** The configured roots (PI_WORKSPACE_ROOTS) and who may open which folders under them. */
export interface RootAccess {
  workspaceRoots: string[];
  workspaceAccess: WorkspaceAccess;
}

/** The real path of an existing folder, or null. */
const realDir = (p: string) => fs.realpath(p).catch(() => null);

/**
 * The real path of a root `principal` asks for and the configured root it lies under. Refused
 * (WORKSPACE_NOT_ALLOWED, naming only the caller's own folders): not an existing directory, a
 * configured root itself (it holds everyone's folders), or outside every folder granted to the
 * caller (workspace-grants.ts; symlinks resolved on both sides, a granted folder that does not
 * exist or whose real path leaves every root grants nothing). Whether a path outside the
 * caller's folders exists is never said.
 */
export async function resolveRoot(
  { workspaceRoots, workspaceAccess }: RootAccess,
  principal: string,
  workspaceRoot: string,
): Promise<Result<{ root: string; configuredRoot: string }>> {
  const requested = path.resolve(workspaceRoot);
  const real = await fs.realpath(requested).catch(() => null);
  const isDir = real ? (await fs.stat(real).catch(() => null))?.isDirectory() === true : false;
  const configured = await Promise.all(workspaceRoots.map(realDir));
  const folders = await Promise.all(
    foldersFor(workspaceAccess, principal).map(async (folder) => ({
      folder,
      real: await realDir(folder),
    })),
  );
  const underRoot = (p: string) => configured.some((r) => r !== null && isUnder(p, r));
  // A granted folder that is missing, or whose real path leaves every root, grants nothing.
  const usable = folders.filter(
    (f): f is { folder: string; real: string } => f.real !== null && underRoot(f.real),
  );
  const isRoot = real !== null && configured.includes(real);
  const configuredRoot = real === null ? undefined : configured.find((r) => r !== null && isUnder(real, r));
  if (real && isDir && !isRoot && configuredRoot && usable.some((f) => isUnder(real, f.real)))
    return ok({ root: real, configuredRoot });

  const mayOpen = usable.map((f) => f.folder);
  const unusable = folders.filter((f) => f.real === null || !underRoot(f.real)).map((f) => f.folder);
  const yours =
    (mayOpen.length > 0 ? `you may open folders under ${mayOpen.join(", ")}` : "you may open no folder") +
    (unusable.length > 0
      ? ` (granted but missing or outside PI_WORKSPACE_ROOTS: ${unusable.join(", ")})`
      : "");
  // One reason for all but a root: which paths outside the caller's folders exist (a symlink
  // from their folder could point anywhere) is not the caller's to learn.
  const why = isRoot
    ? "is a configured workspace root (PI_WORKSPACE_ROOTS), which holds everyone's folders"
    : "is not an existing directory in a folder you may open";
  return refuse("WORKSPACE_NOT_ALLOWED", `${requested} ${why}; ${yours}`, {
    mayOpen,
    ...(unusable.length > 0 ? { unusable } : {}),
  });
}
