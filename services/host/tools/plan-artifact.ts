// Writes a submitted plan's exact Markdown bytes to a new file under <workspace>/.pi/plan/ and reads
// it back (docs/architecture.md "Plans"), only through the sealed folder's handles (tools/plan-dir.ts):
// exclusive create, 0444, flushed, never replacing a file. Refuses oversize plans and name floods.
import { createHash } from "node:crypto";
import path from "node:path";
import { AppError } from "../../protocol/app-error.ts";
import { ok, refuse, type Result } from "../../protocol/result.ts";
import { openPlanDir, PLAN_DIR_REL, type PlanDir, resealAfterWrite } from "./plan-dir.ts";

export const PLAN_DIR = PLAN_DIR_REL;
export const MAX_PLAN_BYTES = 512 * 1024;
export const MAX_NAME_COLLISIONS = 50;

export interface WrittenArtifact {
  relativePath: string;
  absolutePath: string;
  sha256: string;
  byteSize: number;
  /** Removes the file again (the row did not commit). */
  remove(): Promise<void>;
}

/** ASCII slug of the title (fallback `plan`), at most 48 characters. */
export function planSlug(title: string): string {
  const slug = title
    .normalize("NFKD")
    .replace(/[^\x20-\x7e]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48)
    .replace(/-+$/g, "");
  return slug || "plan";
}

function stamp(d: Date): string {
  return d
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z")
    .replace("T", "-");
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/**
 * The plan folder's own refusals (tools/plan-dir.ts throws them: an unsafe, missing or unwritable
 * `.pi/plan`) as the values this file answers; anything else is a bug and still throws.
 */
async function refusalsAsValues<T>(run: () => Promise<Result<T>>): Promise<Result<T>> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof AppError) return refuse(err.code, err.message, err.details);
    throw err;
  }
}

export interface WriteArtifactOptions {
  workspaceRoot: string;
  title: string;
  markdown: string;
  now: Date;
  /** The sandbox user the `.pi` check is about (the host config's; default pihost-sandbox). */
  sandboxUser?: string;
  /** Test hooks only: runs after the file is created and before its bytes are written. */
  beforeWrite?: () => Promise<void>;
}

/**
 * Writes the plan to a new file: PLAN_MARKDOWN_TOO_LARGE over the limit, PLAN_ARTIFACT_COLLISION_LIMIT
 * when every name is taken, and the plan folder's refusals (unsafe `.pi`, not writable) as values.
 */
export function writePlanArtifact(opts: WriteArtifactOptions): Promise<Result<WrittenArtifact>> {
  const bytes = Buffer.from(opts.markdown, "utf8");
  if (bytes.byteLength > MAX_PLAN_BYTES)
    return Promise.resolve(
      refuse("PLAN_MARKDOWN_TOO_LARGE", `plan is ${bytes.byteLength} bytes; the limit is ${MAX_PLAN_BYTES}`),
    );
  return refusalsAsValues(async () => {
    // Created if missing, then checked on the open handles: owner, mode bits and ACLs of .pi and .pi/plan.
    const dir = await openPlanDir(opts.workspaceRoot, {
      create: true,
      check: true,
      ...(opts.sandboxUser ? { sandboxUser: opts.sandboxUser } : {}),
    });
    try {
      return await createArtifact(dir, opts, bytes);
    } finally {
      await dir.close();
      // The new file moved the folder's change time: its seal is read again off this path.
      resealAfterWrite(opts.workspaceRoot, opts.sandboxUser);
    }
  });
}

/** The first free name of the plan's slug and stamp (a bounded suffix), created exclusively. */
async function createArtifact(
  dir: PlanDir,
  opts: WriteArtifactOptions,
  bytes: Buffer,
): Promise<Result<WrittenArtifact>> {
  const root = opts.workspaceRoot;
  const base = `${planSlug(opts.title)}-${stamp(opts.now)}`;
  for (let n = 1; n <= MAX_NAME_COLLISIONS; n++) {
    const name = n === 1 ? `${base}.md` : `${base}-${n}.md`;
    // Exclusive create through the folder's handle: never replaces a file, never follows a link.
    if (!(await dir.createFile(name, bytes, opts.beforeWrite))) continue;
    await dir.sync();
    return ok({
      relativePath: `${PLAN_DIR}/${name}`,
      absolutePath: path.join(root, PLAN_DIR, name),
      sha256: sha256Hex(bytes),
      byteSize: bytes.byteLength,
      remove: () => removePlanArtifact(root, name),
    });
  }
  return refuse("PLAN_ARTIFACT_COLLISION_LIMIT", `more than ${MAX_NAME_COLLISIONS} plan files named ${base}`);
}

/** Removes a file this host just wrote (its row did not commit), through the folder's handle. */
async function removePlanArtifact(root: string, name: string): Promise<void> {
  const dir = await openPlanDir(root, { create: false, check: false }).catch(() => null);
  if (!dir) return;
  try {
    await dir.removeFile(name);
  } finally {
    await dir.close();
  }
}

/** The file name of a recorded artifact path, which must be `.pi/plan/<name>`. */
function artifactName(relativePath: string): Result<string> {
  const prefix = `${PLAN_DIR}/`;
  const name = relativePath.startsWith(prefix) ? relativePath.slice(prefix.length) : "";
  if (!name || name.includes("/") || name === "." || name === "..")
    return refuse("PLAN_ARTIFACT_PATH_UNSAFE", "artifact path is not a file in .pi/plan", {
      reason: "artifact path is not a file in .pi/plan",
      path: relativePath,
    });
  return ok(name);
}

/** The plan file's sha256 (hex) as it is now, read as readPlanArtifact does; null when it cannot be read. */
export async function planFileHash(workspaceRoot: string, relativePath: string): Promise<string | null> {
  try {
    const read = await readPlanArtifact(workspaceRoot, relativePath);
    return read.ok ? sha256Hex(read.value) : null;
  } catch {
    return null;
  }
}

/**
 * Reads an artifact for hashing or display through handles, following no link in any component
 * below the workspace root. Refuses: a symlinked or non-regular file or folder
 * PLAN_ARTIFACT_PATH_UNSAFE, a missing one FILE_NOT_FOUND, one the host may not read (or larger than
 * any plan) FILE_NOT_READABLE. The caller compares the bytes' hash with the row.
 */
export async function readPlanArtifact(workspaceRoot: string, relativePath: string): Promise<Result<Buffer>> {
  const name = artifactName(relativePath);
  if (!name.ok) return name;
  return refusalsAsValues(async () => {
    const dir = await openPlanDir(workspaceRoot, { create: false, check: false });
    try {
      return ok(await dir.readFile(name.value, MAX_PLAN_BYTES));
    } finally {
      await dir.close();
    }
  });
}
