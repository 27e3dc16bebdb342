// The host's checks of the file helper's replies (the helper is untrusted): the result of each op,
// rebuilt from what was checked, and an error reply as the AppError the caller gets.
import { AppError } from "../../../protocol/app-error.ts";
import { type ErrorCode, isErrorCode } from "../../../protocol/error-codes.ts";
import { decodeParams, ToolExecuteResult } from "../../../protocol/schemas.ts";
import type { FileToolName } from "../workspace-files.ts";
import { MAX_PLAN_FILES, MAX_PREVIEW_FILE_BYTES } from "../workspace-files.ts";

export type FileHelperRequest =
  | { op: "tool"; tool: FileToolName; args: Record<string, unknown> }
  | { op: "previewFile"; path: string }
  | { op: "listPlanFiles" };

export interface PreviewFileResult {
  rel: string;
  bytes: Buffer;
}
export interface PlanFilesResult {
  names: string[];
}
export type FileHelperResult<R extends FileHelperRequest> = R extends { op: "tool" }
  ? ToolExecuteResult
  : R extends { op: "previewFile" }
    ? PreviewFileResult
    : PlanFilesResult;

/** The codes a helper may answer with; any other becomes TOOL_FAILED. */
const HELPER_CODES: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  "INVALID_PARAMS",
  "PATH_OUTSIDE_WORKSPACE",
  "WORKSPACE_PATH_DENIED",
  "FILE_NOT_FOUND",
  "FILE_IS_BINARY",
  "FILE_NOT_READABLE",
  "EDIT_NO_MATCH",
  "EDIT_NOT_UNIQUE",
  "TOOL_TIMEOUT",
  "TOOL_FAILED",
  "TOOL_NOT_FOUND",
]);
const MAX_MESSAGE_CHARS = 2000;
const MAX_DETAILS_BYTES = 16 * 1024;
const MAX_BASE64_CHARS = Math.ceil(MAX_PREVIEW_FILE_BYTES / 3) * 4;

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function boundedDetails(v: unknown): Record<string, unknown> | undefined {
  if (!isPlainObject(v)) return undefined;
  try {
    return JSON.stringify(v).length <= MAX_DETAILS_BYTES ? v : undefined;
  } catch {
    return undefined;
  }
}

/** A helper's error reply as the AppError the caller gets. */
export function helperError(e: unknown): AppError {
  const o = isPlainObject(e) ? e : {};
  const code = isErrorCode(o.code) && HELPER_CODES.has(o.code) ? o.code : "TOOL_FAILED";
  const message = typeof o.message === "string" ? o.message.slice(0, MAX_MESSAGE_CHARS) : undefined;
  const details = boundedDetails(o.details);
  return new AppError(code, message, details ? { details } : undefined);
}

/** Checks a helper's successful result for `op`; null when it is malformed. */
export function checkResult(op: FileHelperRequest["op"], v: unknown): unknown {
  if (op === "tool") {
    let r: ToolExecuteResult;
    try {
      r = decodeParams(ToolExecuteResult, v);
    } catch {
      return null;
    }
    // A file tool never changes the mode or ends the turn: `next` and `terminate` are not taken.
    const details = boundedDetails(r.details);
    const code = r.code && isErrorCode(r.code) && HELPER_CODES.has(r.code) ? r.code : undefined;
    return {
      content: r.content.map((c) => ({ type: "text" as const, text: c.text })),
      isError: r.isError,
      ...(code ? { code } : r.isError ? { code: "TOOL_FAILED" } : {}),
      ...(details ? { details } : {}),
    };
  }
  if (!isPlainObject(v)) return null;
  if (op === "previewFile") {
    const { rel, base64 } = v;
    if (typeof rel !== "string" || rel.length > 4096 || rel.startsWith("/") || rel.split("/").includes(".."))
      return null;
    if (
      typeof base64 !== "string" ||
      base64.length > MAX_BASE64_CHARS ||
      !/^[A-Za-z0-9+/]*={0,2}$/.test(base64)
    )
      return null;
    return { rel, bytes: Buffer.from(base64, "base64") };
  }
  const names = v.names;
  if (!Array.isArray(names) || names.length > MAX_PLAN_FILES) return null;
  const ok = names.every(
    (n) =>
      typeof n === "string" && n.length <= 255 && n.endsWith(".md") && !n.includes("/") && !n.includes("\0"),
  );
  return ok ? { names: [...names] } : null;
}
