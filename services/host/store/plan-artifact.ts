// Writes a submitted plan's exact Markdown bytes to a new file under <workspace>/.pi/plan/
// (docs/architecture.md "Plans"): exclusive create, flushed, never replacing a file. Refuses a `.pi`
// or `.pi/plan` that is a symlink or not a directory, oversize plans, and too many name collisions.
import { createHash } from "node:crypto";
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import { AppError } from "../../protocol/app-error.ts";

export const PLAN_DIR = path.join(".pi", "plan");
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

/** Ensures `dir` is a real directory (creating it if absent); a symlink or a file is unsafe. */
async function ensureRealDir(dir: string): Promise<void> {
  try {
    await fs.mkdir(dir, { mode: 0o755 });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
      throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", `cannot create ${path.basename(dir)}`, { cause: err });
    }
  }
  const st = await fs.lstat(dir);
  if (st.isSymbolicLink() || !st.isDirectory()) {
    throw new AppError("PLAN_ARTIFACT_PATH_UNSAFE", `${dir} is a symlink or not a directory`);
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const handle = await fs.open(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

export async function writePlanArtifact(opts: {
  workspaceRoot: string;
  title: string;
  markdown: string;
  now: Date;
  /** Test hooks only: runs after the file is created and before its bytes are written. */
  beforeWrite?: () => Promise<void>;
}): Promise<WrittenArtifact> {
  const bytes = Buffer.from(opts.markdown, "utf8");
  if (bytes.byteLength > MAX_PLAN_BYTES) {
    throw new AppError(
      "PLAN_MARKDOWN_TOO_LARGE",
      `plan is ${bytes.byteLength} bytes; the limit is ${MAX_PLAN_BYTES}`,
    );
  }
  const root = await fs.realpath(opts.workspaceRoot).catch((cause) => {
    throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", "workspace root is not accessible", { cause });
  });
  const piDir = path.join(root, ".pi");
  const planDir = path.join(root, PLAN_DIR);
  await ensureRealDir(piDir);
  await ensureRealDir(planDir);

  const base = `${planSlug(opts.title)}-${stamp(opts.now)}`;
  for (let n = 1; n <= MAX_NAME_COLLISIONS; n++) {
    const name = n === 1 ? `${base}.md` : `${base}-${n}.md`;
    const absolutePath = path.join(planDir, name);
    let handle: fs.FileHandle;
    try {
      // O_EXCL never replaces a file; O_NOFOLLOW refuses a planted symlink at the final component.
      handle = await fs.open(
        absolutePath,
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o644,
      );
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "EEXIST") continue;
      throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", "cannot create the plan file", { cause: err });
    }
    const remove = () => fs.rm(absolutePath, { force: true });
    try {
      await opts.beforeWrite?.();
      await handle.writeFile(bytes);
      await handle.sync();
    } catch (err) {
      await handle.close().catch(() => {});
      await remove();
      throw new AppError("PLAN_ARTIFACT_WRITE_FAILED", "cannot write the plan file", { cause: err });
    }
    await handle.close();
    await fsyncDir(planDir);
    return {
      relativePath: path.posix.join(".pi", "plan", name),
      absolutePath,
      sha256: sha256Hex(bytes),
      byteSize: bytes.byteLength,
      remove,
    };
  }
  throw new AppError(
    "PLAN_ARTIFACT_COLLISION_LIMIT",
    `more than ${MAX_NAME_COLLISIONS} plan files named ${base}`,
  );
}

/** Reads an artifact for hashing or display, refusing anything that is not a regular file in place. */
export async function readPlanArtifact(workspaceRoot: string, relativePath: string): Promise<Buffer> {
  const root = await fs.realpath(workspaceRoot);
  const abs = path.join(root, relativePath);
  if (!abs.startsWith(path.join(root, PLAN_DIR) + path.sep)) {
    throw new AppError("PLAN_ARTIFACT_PATH_UNSAFE", "artifact path escapes .pi/plan");
  }
  for (const dir of [path.join(root, ".pi"), path.join(root, PLAN_DIR)]) {
    const st = await fs.lstat(dir);
    if (st.isSymbolicLink() || !st.isDirectory())
      throw new AppError("PLAN_ARTIFACT_PATH_UNSAFE", `${dir} is unsafe`);
  }
  const handle = await fs.open(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
