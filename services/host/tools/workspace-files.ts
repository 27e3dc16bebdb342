// The built-in file tools Read, Glob, Grep, Write and Edit inside one real workspace folder. Paths are
// confined to it (symlinks resolved) and checked against the deny-list; Write and Edit also refuse
// `.pi/plan/`, which belongs to the host.
import { constants, promises as fs } from "node:fs";
import path from "node:path";
import picomatch from "picomatch";
import { AppError } from "../../protocol/app-error.ts";
import type { ToolExecuteResult } from "../../protocol/schemas.ts";

export const MAX_READ_BYTES = 256 * 1024;
const MAX_RESULTS = 500;
const MAX_PREVIEW_FILE_BYTES = 10 * 1024 * 1024;

const DENY_ALWAYS = [
  ".env",
  ".env.*",
  "**/.env",
  "**/.env.*",
  "**/*.pem",
  "**/*.key",
  "**/id_rsa*",
  "**/id_ed25519*",
  ".git/objects/**",
  "**/.git/objects/**",
];
const DENY_WRITES = [".pi/plan", ".pi/plan/**"];
const isDenied = picomatch(DENY_ALWAYS, { dot: true });
const isWriteDenied = picomatch(DENY_WRITES, { dot: true });

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
  const entries = await fs.readdir(dir, { withFileTypes: true }).catch(() => []);
  entries.sort((a, b) => a.name.localeCompare(b.name));
  for (const e of entries) {
    if (budget.n-- <= 0) return;
    const abs = path.join(dir, e.name);
    const rel = path.relative(r, abs).split(path.sep).join("/");
    if (e.name === ".git" || e.name === "node_modules" || isDenied(rel)) continue;
    if (e.isDirectory()) yield* walk(abs, r, budget);
    else if (e.isFile()) yield rel;
  }
}

async function readText(abs: string): Promise<string> {
  const handle = await fs
    .open(abs, constants.O_RDONLY | constants.O_NOFOLLOW)
    .catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") throw new AppError("FILE_NOT_FOUND");
      throw new AppError("TOOL_FAILED", err.message, { cause: err });
    });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new AppError("TOOL_FAILED", "not a regular file");
    const buf = Buffer.alloc(Math.min(st.size, MAX_READ_BYTES));
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    const data = buf.subarray(0, bytesRead);
    if (data.includes(0)) throw new AppError("FILE_IS_BINARY");
    return data.toString("utf8");
  } finally {
    await handle.close();
  }
}

/** Bytes of a confined regular file for BrowserPreview (O_NOFOLLOW, at most MAX_PREVIEW_FILE_BYTES). */
export async function readBytes(abs: string): Promise<Buffer> {
  const handle = await fs.open(abs, constants.O_RDONLY | constants.O_NOFOLLOW).catch(() => {
    throw new AppError("FILE_NOT_FOUND");
  });
  try {
    const st = await handle.stat();
    if (!st.isFile()) throw new AppError("FILE_NOT_FOUND", "not a regular file");
    const buf = Buffer.alloc(Math.min(st.size, MAX_PREVIEW_FILE_BYTES));
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await handle.close();
  }
}

async function writeFileSafe(abs: string, content: string): Promise<void> {
  await fs.mkdir(path.dirname(abs), { recursive: true });
  // O_NOFOLLOW: a symlink planted at the final component is refused rather than followed.
  const handle = await fs.open(
    abs,
    constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW,
    0o644,
  );
  try {
    await handle.writeFile(content, "utf8");
  } finally {
    await handle.close();
  }
}

export type FileToolName = "Read" | "Glob" | "Grep" | "Write" | "Edit";

/** Runs one file tool in the real workspace folder `r`; refusals throw AppError. */
export async function runFileTool(
  tool: FileToolName,
  args: Record<string, unknown>,
  r: string,
): Promise<ToolExecuteResult> {
  switch (tool) {
    case "Read": {
      const { abs, rel } = await confine(r, argString(args, "path")!, false);
      const content = await readText(abs);
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
    case "Grep": {
      const pattern = argString(args, "pattern")!;
      let re: RegExp;
      try {
        re = new RegExp(pattern);
      } catch (cause) {
        throw new AppError("INVALID_PARAMS", "pattern is not a valid regular expression", { cause });
      }
      const base = await confine(r, argString(args, "path", true) ?? ".", false);
      const filter = picomatch(argString(args, "glob", true) ?? "**", { dot: false });
      const out: string[] = [];
      const st = await fs.stat(base.abs).catch(() => null);
      const files = st?.isFile() ? [base.rel] : [];
      if (st?.isDirectory()) for await (const rel of walk(base.abs, r, { n: 20_000 })) files.push(rel);
      for (const rel of files) {
        if (!filter(rel)) continue;
        const content = await readText(path.join(r, rel)).catch(() => null);
        if (content === null) continue;
        content.split("\n").forEach((line, i) => {
          if (out.length < MAX_RESULTS && re.test(line)) out.push(`${rel}:${i + 1}:${line}`);
        });
        if (out.length >= MAX_RESULTS) break;
      }
      return text(out.length ? out.join("\n") : "(no matches)", { count: out.length });
    }
    case "Write": {
      const { abs, rel } = await confine(r, argString(args, "path")!, true);
      const content = argString(args, "content")!;
      await writeFileSafe(abs, content);
      return text(`wrote ${Buffer.byteLength(content)} bytes to ${rel}`, { path: rel });
    }
    case "Edit": {
      const { abs, rel } = await confine(r, argString(args, "path")!, true);
      const oldText = argString(args, "oldText")!;
      const newText = argString(args, "newText")!;
      const content = await readText(abs);
      const first = content.indexOf(oldText);
      if (oldText === "" || first < 0) throw new AppError("EDIT_NO_MATCH");
      if (content.indexOf(oldText, first + 1) >= 0) throw new AppError("EDIT_NOT_UNIQUE");
      await writeFileSafe(abs, content.slice(0, first) + newText + content.slice(first + oldText.length));
      return text(`edited ${rel}`, { path: rel });
    }
  }
}
