// Grep as Debian's ripgrep (`/usr/bin/rg`), run by the file helper inside the sandbox as the sandbox
// user (docs/architecture.md "Tools"): the argument list with every bound, and the streaming,
// bounded reading of its `--json` output into `rel:line:text` lines.
//
// The pattern dialect is ripgrep's default engine, Rust's `regex` syntax (never `-P`/PCRE2): no
// look-around and no backreferences, and matching time is linear in the size of the input, so no
// pattern can backtrack for ever. An invalid pattern (or one whose compiled form exceeds the size
// limits) is INVALID_PARAMS with ripgrep's reason.
import { spawn } from "node:child_process";
import { AppError } from "../../../protocol/app-error.ts";

export const RG = "/usr/bin/rg";
/** Total matching lines returned; ripgrep is stopped once reached. */
export const GREP_MAX_MATCHES = 500;
/** A single Grep's time bound inside the helper (the helper's call timeout is longer). */
export const GREP_TIMEOUT_MS = 10_000;
/** Files larger than this are not searched. */
export const GREP_MAX_FILESIZE = "8M";
/** Characters of one matching line kept in the result. */
export const GREP_MAX_LINE_CHARS = 500;
/** One `--json` line longer than this is dropped unread (a match in a huge line). */
const MAX_JSON_LINE_BYTES = 4 * 1024 * 1024;
const MAX_STDERR_BYTES = 8 * 1024;

export interface GrepRequest {
  pattern: string;
  /** Workspace-relative path to search (confined by the caller); "" is the workspace itself. */
  rel: string;
  /** The caller's glob (gitignore-style, as ripgrep's `--glob`). */
  glob?: string;
  /** Basename globs of the deny-list: ripgrep never opens a file matching one, in any case. */
  denyNames: readonly string[];
  /** Folders never entered (.git, node_modules), in any case. */
  skipDirs: readonly string[];
}

/**
 * ripgrep's arguments for one Grep, run with the workspace as cwd. The pattern is passed as
 * `--regexp=` (never read as a flag) and the path after `--`. The deny rules are `--iglob`s (case
 * ignored: `.ENV`, `Server.PEM`), which ripgrep adds after every `--glob` and applies last-wins, so the
 * caller's glob cannot re-include a denied file in any spelling.
 */
export function grepArgs(req: GrepRequest): string[] {
  if (req.pattern.includes("\0")) throw new AppError("INVALID_PARAMS", "pattern contains NUL");
  if (req.glob?.includes("\0")) throw new AppError("INVALID_PARAMS", "glob contains NUL");
  const args = [
    "--json",
    "--no-config",
    "--no-follow",
    "--no-ignore",
    "--no-messages",
    "--sort=path",
    "--color=never",
    `--max-filesize=${GREP_MAX_FILESIZE}`,
    "--max-columns=4096",
    "--max-columns-preview",
    `--max-count=${GREP_MAX_MATCHES}`,
    "--regex-size-limit=4M",
    "--dfa-size-limit=16M",
  ];
  if (req.glob !== undefined) args.push(`--glob=${req.glob}`);
  for (const name of req.denyNames) args.push(`--iglob=!${name}`);
  for (const dir of req.skipDirs) args.push(`--iglob=!${dir}`);
  args.push(`--regexp=${req.pattern}`, "--", req.rel === "" ? "." : req.rel);
  return args;
}

interface RgMatch {
  type?: unknown;
  data?: {
    path?: { text?: unknown };
    lines?: { text?: unknown; bytes?: unknown };
    line_number?: unknown;
  };
}

/** One ripgrep `match` message as its path and `rel:line:text`, or null for anything else. */
export function matchLine(msg: RgMatch): { rel: string; line: string } | null {
  if (msg.type !== "match" || !msg.data) return null;
  const p = msg.data.path?.text;
  const n = msg.data.line_number;
  if (typeof p !== "string" || typeof n !== "number") return null;
  const rel = p.startsWith("./") ? p.slice(2) : p;
  const lines = msg.data.lines;
  let text =
    typeof lines?.text === "string"
      ? lines.text
      : typeof lines?.bytes === "string"
        ? Buffer.from(lines.bytes, "base64").toString("utf8")
        : "";
  text = text.replace(/\r?\n$/, "");
  if (text.length > GREP_MAX_LINE_CHARS) text = `${text.slice(0, GREP_MAX_LINE_CHARS)} [line truncated]`;
  return { rel, line: `${rel}:${n}:${text}` };
}

export interface GrepOutcome {
  lines: string[];
  /** The match bound was reached and ripgrep was stopped. */
  truncated: boolean;
}

/**
 * Runs ripgrep in `cwd` and collects at most GREP_MAX_MATCHES lines accepted by `keep`. Throws
 * TOOL_TIMEOUT past `timeoutMs` (ripgrep killed), INVALID_PARAMS for a pattern ripgrep refuses.
 */
export function runRipgrep(
  cwd: string,
  args: string[],
  keep: (rel: string) => boolean,
  timeoutMs = GREP_TIMEOUT_MS,
): Promise<GrepOutcome> {
  return new Promise((resolve, reject) => {
    const child = spawn(RG, args, { cwd, stdio: ["ignore", "pipe", "pipe"], env: { LANG: "C.UTF-8" } });
    const lines: string[] = [];
    let truncated = false;
    let timedOut = false;
    let partial: Buffer[] = [];
    let partialBytes = 0;
    let skipping = false;
    let stderr = "";
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill("SIGKILL");
    }, timeoutMs);
    const onLine = (raw: Buffer) => {
      if (truncated) return;
      let msg: RgMatch;
      try {
        msg = JSON.parse(raw.toString("utf8"));
      } catch {
        return;
      }
      const m = matchLine(msg);
      if (m === null || !keep(m.rel)) return;
      lines.push(m.line);
      if (lines.length >= GREP_MAX_MATCHES) {
        truncated = true;
        child.kill("SIGKILL");
      }
    };
    child.stdout.on("data", (chunk: Buffer) => {
      let start = 0;
      for (let nl = chunk.indexOf(10); nl >= 0; nl = chunk.indexOf(10, start)) {
        const piece = chunk.subarray(start, nl);
        if (!skipping) onLine(partial.length ? Buffer.concat([...partial, piece]) : piece);
        partial = [];
        partialBytes = 0;
        skipping = false;
        start = nl + 1;
      }
      const rest = chunk.subarray(start);
      if (skipping || rest.length === 0) return;
      // Invariant: at most MAX_JSON_LINE_BYTES of one line are ever held.
      if (partialBytes + rest.length > MAX_JSON_LINE_BYTES) {
        skipping = true;
        partial = [];
        partialBytes = 0;
        return;
      }
      partial.push(Buffer.from(rest));
      partialBytes += rest.length;
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d: string) => {
      if (stderr.length < MAX_STDERR_BYTES) stderr = (stderr + d).slice(0, MAX_STDERR_BYTES);
    });
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(new AppError("TOOL_FAILED", `ripgrep could not run: ${err.message}`, { cause: err }));
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      if (timedOut && !truncated)
        return reject(
          new AppError("TOOL_TIMEOUT", `Grep ran past its ${timeoutMs} ms bound and was stopped`, {
            details: { timeoutMs },
          }),
        );
      if (truncated || code === 0 || code === 1) return resolve({ lines, truncated });
      const reason = stderr.trim();
      // With --no-messages, what ripgrep still prints on exit 2 is a refusal of the pattern itself.
      if (/regex parse error|size limit|error parsing|regex/i.test(reason))
        return reject(
          new AppError("INVALID_PARAMS", `pattern is not a valid regular expression: ${reason}`, {
            details: { reason },
          }),
        );
      if (reason === "") return resolve({ lines, truncated });
      reject(new AppError("TOOL_FAILED", `ripgrep failed: ${reason}`, { details: { reason } }));
    });
  });
}
