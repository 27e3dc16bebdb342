// The built-in file tools Read, Glob, Grep, Write and Edit inside one real workspace folder, and the
// deny-list (its one place). They run in the file helper (file-helper/helper-main.ts), as the sandbox
// user inside the workspace's sandbox, never in the host. Paths are confined to the workspace
// (symlinks resolved) and checked against the deny-list; Write and Edit also refuse `.pi/plan/`.
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { AppError } from "../../protocol/app-error.ts";
import type { ToolExecuteResult } from "../../protocol/schemas.ts";
import { GREP_TIMEOUT_MS, grepArgs, runRipgrep } from "./file-helper/grep.ts";

export const MAX_READ_BYTES = 256 * 1024;
const MAX_RESULTS = 500;
export const MAX_PREVIEW_FILE_BYTES = 10 * 1024 * 1024;
/** At most this many plan files are listed (the orphan-artifact scan at start). */
export const MAX_PLAN_FILES = 10_000;

/**
 * File names denied at any depth (basename globs): secrets a tool must never read or list. Matched
 * without regard to case (`.ENV`, `ID_RSA`, `Server.PEM`): on a case-insensitive file system they are
 * the same file, and on any other they are the same kind of secret.
 */
export const DENY_NAMES = [".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*"] as const;
/** Folders Glob and Grep never enter (compared without regard to case, as DENY_NAMES). */
export const SKIP_DIRS = [".git", "node_modules"] as const;
const DENY_ALWAYS = [...DENY_NAMES.flatMap((n) => [n, `**/${n}`]), ".git/objects/**", "**/.git/objects/**"];
const DENY_WRITES = [".pi/plan", ".pi/plan/**"];
const isDenied = picomatch(DENY_ALWAYS, { dot: true, nocase: true });
const isWriteDenied = picomatch(DENY_WRITES, { dot: true, nocase: true });
const SKIPPED = new Set<string>(SKIP_DIRS);

/** Is a workspace-relative path on the deny-list (never read, listed or searched), in any case? */
export function isDeniedPath(rel: string): boolean {
  return isDenied(rel);
}

/** Is this folder name one Glob and Grep never enter (`.git`, `.GIT`, `node_modules`, ...)? */
export function isSkippedDir(name: string): boolean {
  return SKIPPED.has(name.toLowerCase());
}

function text(t: string, details?: Record<string, unknown>): ToolExecuteResult {
  return { content: [{ type: "text", text: t }], isError: false, ...(details ? { details } : {}) };
}

function argString(args: Record<string, unknown>, name: string, optional = false): string | undefined {
  const v = args[name];
  if (v === undefined && optional) return undefined;
  if (typeof v !== "string") throw new AppError("INVALID_PARAMS", `${name} must be a string`);
  return v;
}

function argInt(args: Record<string, unknown>, name: string): number | undefined {
  const v = args[name];
  if (v === undefined) return undefined;
  if (typeof v !== "number" || !Number.isInteger(v) || v < 0)
    throw new AppError("INVALID_PARAMS", `${name} must be a non-negative integer`);
  return v;
}

/**
 * Resolves a tool path to a real absolute path inside the workspace `r` (itself real), following symlinks of the
 * longest existing prefix. Returns the workspace-relative path used for deny-list checks.
 */
export async function confine(
  r: string,
  p: string,
  forWrite: boolean,
): Promise<{ abs: string; rel: string }> {
  if (p.includes("\0")) throw new AppError("PATH_OUTSIDE_WORKSPACE", "path contains NUL");
  const lexical = path.resolve(r, p);
  if (lexical !== r && !lexical.startsWith(r + path.sep))
    throw new AppError("PATH_OUTSIDE_WORKSPACE", `${p} is outside the workspace`);
  // Resolve symlinks of the existing part of the path.
  let existing = lexical;
  const rest: string[] = [];
  for (;;) {
    try {
      existing = await fs.realpath(existing);
      break;
    } catch {
      // A link that does not resolve here (dangling, or to a place outside the sandbox's view) is
      // not proven to stay inside: it counts as outside, for reads and writes alike.
      const st = await fs.lstat(existing).catch(() => null);
      if (st?.isSymbolicLink())
        throw new AppError(
          "PATH_OUTSIDE_WORKSPACE",
          `${p} goes through a link that leads outside the workspace`,
        );
      rest.unshift(path.basename(existing));
      existing = path.dirname(existing);
    }
  }
  const abs = path.join(existing, ...rest);
  if (abs !== r && !abs.startsWith(r + path.sep))
    throw new AppError("PATH_OUTSIDE_WORKSPACE", `${p} resolves outside the workspace`);
  const rel = path.relative(r, abs).split(path.sep).join("/");
  if (rel && isDenied(rel)) throw new AppError("WORKSPACE_PATH_DENIED", `${rel} is on the deny-list`);
  if (forWrite && rel && isWriteDenied(rel))
    throw new AppError("WORKSPACE_PATH_DENIED", ".pi/plan belongs to the host");
  return { abs, rel };
}

async function* walk(dir: string, r: string, budget: { n: number }): AsyncGenerator<string> {
  // Dirents are lstat types: a symlink (to a folder or to /) is neither walked nor listed.
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (budget.n-- <= 0) return;
    const abs = path.join(dir, e.name);
    const rel = path.relative(r, abs).split(path.sep).join("/");
    if (isSkippedDir(e.name) || isDenied(rel)) continue;
    if (e.isDirectory()) yield* walk(abs, r, budget);
    else if (e.isFile()) yield rel;
  }
}

/** The refusal for a failed open or write of `rel`: unreadable, vanished, a planted link, or other. */
function fsRefusal(err: NodeJS.ErrnoException, rel: string, writing: boolean): AppError {
  const details = { path: rel, errno: err.code ?? "unknown" };
  if (err.code === "ENOENT" && !writing) return new AppError("FILE_NOT_FOUND", undefined, { details });
  if (err.code === "EACCES" || err.code === "EPERM")
    return new AppError(
      "FILE_NOT_READABLE",
      `the sandbox user may not ${writing ? "write" : "read"} ${rel} (docs/operations.md: files written as root)`,
      { details },
    );
  if (err.code === "ELOOP")
    return new AppError("PATH_OUTSIDE_WORKSPACE", `${rel} became a symbolic link`, { details });
  const what = writing ? "write" : "read";
  return new AppError("TOOL_FAILED", `cannot ${what} ${rel}: ${err.code ?? err.message}`, {
    cause: err,
    details,
  });
}

/** At most `max` bytes of a regular file, opened without following a final symlink. */
async function readBounded(abs: string, rel: string, max: number): Promise<Buffer> {
  const handle = await fs
    .open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    .catch((err: NodeJS.ErrnoException) => {
      throw fsRefusal(err, rel, false);
    });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new AppError("TOOL_FAILED", `${rel} is not a regular file`);
    const buf = Buffer.alloc(Math.min(st.size, max));
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

async function readText(abs: string, rel: string): Promise<string> {
  const data = await readBounded(abs, rel, MAX_READ_BYTES);
  if (data.includes(0)) throw new AppError("FILE_IS_BINARY");
  return data.toString("utf8");
}

/**
 * BrowserPreview's `file://` page: the confined regular file `p` (O_NOFOLLOW, at most
 * MAX_PREVIEW_FILE_BYTES) as base64; anything not a regular file is FILE_NOT_FOUND.
 */
export async function previewFile(r: string, p: string): Promise<{ rel: string; base64: string }> {
  const { abs, rel } = await confine(r, p, false);
  try {
    return { rel, base64: (await readBounded(abs, rel, MAX_PREVIEW_FILE_BYTES)).toString("base64") };
  } catch (err) {
    if (err instanceof AppError && err.code === "TOOL_FAILED") throw new AppError("FILE_NOT_FOUND");
    throw err;
  }
}

/**
 * Names of the regular `*.md` files directly in `<r>/.pi/plan` (types from the directory entries,
 * nothing followed), at most MAX_PLAN_FILES; none when `.pi` or `.pi/plan` is not a real folder.
 */
export async function listPlanFiles(r: string): Promise<string[]> {
  for (const dir of [path.join(r, ".pi"), path.join(r, ".pi", "plan")]) {
    const st = await fs.lstat(dir).catch(() => null);
    if (!st?.isDirectory()) return [];
  }
  const names: string[] = [];
  const dir = await fs.opendir(path.join(r, ".pi", "plan")).catch(() => null);
  if (!dir) return names;
  try {
    for await (const e of dir) {
      if (e.isFile() && e.name.endsWith(".md")) names.push(e.name);
      if (names.length >= MAX_PLAN_FILES) break;
    }
  } catch {}
  return names.sort();
}

/** Bytes of a confined file for an in-host BrowserPreview; superseded by `previewFile` in the helper. */
export async function readBytes(abs: string): Promise<Buffer> {
  return readBounded(abs, abs, MAX_PREVIEW_FILE_BYTES).catch((err: unknown) => {
    throw err instanceof AppError && err.code === "FILE_NOT_READABLE" ? err : new AppError("FILE_NOT_FOUND");
  });
}

async function writeFileSafe(abs: string, rel: string, content: string): Promise<void> {
  try {
    await fs.mkdir(path.dirname(abs), { recursive: true });
    // O_NOFOLLOW: a symlink planted at the final component is refused rather than followed;
    // O_NONBLOCK: a FIFO planted there is refused (ENXIO) rather than waited on.
    const handle = await fs.open(
      abs,
      constants.O_WRONLY | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      0o644,
    );
    try {
      if (!(await handle.stat()).isFile()) throw new AppError("TOOL_FAILED", `${rel} is not a regular file`);
      await handle.truncate(0);
      await handle.writeFile(content, "utf8");
    } finally {
      await handle.close();
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw fsRefusal(err as NodeJS.ErrnoException, rel, true);
  }
}

async function grep(args: Record<string, unknown>, r: string, timeoutMs: number): Promise<ToolExecuteResult> {
  const pattern = argString(args, "pattern")!;
  const glob = argString(args, "glob", true);
  const base = await confine(r, argString(args, "path", true) ?? ".", false);
  if (!(await fs.lstat(base.abs).catch(() => null))) return text("(no matches)", { count: 0 });
  const argv = grepArgs({
    pattern,
    rel: base.rel,
    denyNames: DENY_NAMES,
    skipDirs: SKIP_DIRS,
    ...(glob !== undefined ? { glob } : {}),
  });
  // The deny rules are ripgrep's; the output is checked again against the same list.
  const keep = (rel: string) => !isDenied(rel) && !rel.split("/").some(isSkippedDir);
  const { lines, truncated } = await runRipgrep(r, argv, keep, timeoutMs);
  return text(lines.length ? lines.join("\n") : "(no matches)", {
    count: lines.length,
    ...(truncated ? { truncated: true } : {}),
  });
}

export type FileToolName = "Read" | "Glob" | "Grep" | "Write" | "Edit";

export interface FileToolOptions {
  /** Grep's time bound (default GREP_TIMEOUT_MS). */
  grepTimeoutMs?: number;
}

/** Runs one file tool in the real workspace folder `r`; refusals throw AppError. */
export async function runFileTool(
  tool: FileToolName,
  args: Record<string, unknown>,
  r: string,
  opts: FileToolOptions = {},
): Promise<ToolExecuteResult> {
  switch (tool) {
    case "Read": {
      const { abs, rel } = await confine(r, argString(args, "path")!, false);
      const content = await readText(abs, rel);
      const lines = content.split("\n");
      const offset = argInt(args, "offset") ?? 0;
      const limit = argInt(args, "limit") ?? lines.length;
      const slice = lines.slice(offset, offset + limit).join("\n");
      return text(slice, { path: rel, lines: lines.length });
    }
    case "Glob": {
      const pattern = argString(args, "pattern")!;
      const match = picomatch(pattern, { dot: false });
      const out: string[] = [];
      for await (const rel of walk(r, r, { n: 20_000 })) {
        if (match(rel)) out.push(rel);
        if (out.length >= MAX_RESULTS) break;
      }
      return text(out.length ? out.join("\n") : "(no matches)", { count: out.length });
    }
    case "Grep":
      return grep(args, r, opts.grepTimeoutMs ?? GREP_TIMEOUT_MS);
    case "Write": {
      const { abs, rel } = await confine(r, argString(args, "path")!, true);
      const content = argString(args, "content")!;
      await writeFileSafe(abs, rel, content);
      return text(`wrote ${Buffer.byteLength(content)} bytes to ${rel}`, { path: rel });
    }
    case "Edit": {
      const { abs, rel } = await confine(r, argString(args, "path")!, true);
      const oldText = argString(args, "oldText")!;
      const newText = argString(args, "newText")!;
      const content = await readText(abs, rel);
      const first = content.indexOf(oldText);
      if (oldText === "" || first < 0) throw new AppError("EDIT_NO_MATCH");
      if (content.indexOf(oldText, first + 1) >= 0) throw new AppError("EDIT_NOT_UNIQUE");
      await writeFileSafe(
        abs,
        rel,
        content.slice(0, first) + newText + content.slice(first + oldText.length),
      );
      return text(`edited ${rel}`, { path: rel });
    }
  }
}
