// The file helper: the program that runs INSIDE a workspace's sandbox as the sandbox user (never in
// the host). It answers the host's request frames on stdin with reply frames on stdout, one at a
// time, and exits at the end of stdin. First frame out: `{ready: true, version}`.
import { promises as fs } from "node:fs";
import { AppError } from "../../../protocol/app-error.ts";
import { type FileToolName, listPlanFiles, previewFile, runFileTool } from "../workspace-files.ts";
import { encodeFrame, FILE_HELPER_PROTOCOL, FrameDecoder, FrameError } from "./frames.ts";

const TOOLS: readonly FileToolName[] = ["Read", "Glob", "Grep", "Write", "Edit"];
const MAX_MESSAGE_CHARS = 2000;

type Reply =
  | { id: number | null; ok: true; result: unknown }
  | { id: number | null; ok: false; error: unknown };

function send(frame: unknown): void {
  let bytes: Buffer;
  try {
    bytes = encodeFrame(frame);
  } catch (err) {
    const id = (frame as { id?: unknown }).id ?? null;
    bytes = encodeFrame({ id, ok: false, error: { code: "TOOL_FAILED", message: (err as Error).message } });
  }
  process.stdout.write(bytes);
}

function errorOf(err: unknown): { code: string; message: string; details?: Record<string, unknown> } {
  if (err instanceof AppError)
    return {
      code: err.code,
      message: err.message.slice(0, MAX_MESSAGE_CHARS),
      ...(err.details ? { details: err.details } : {}),
    };
  const message = err instanceof Error ? err.message : String(err);
  return { code: "TOOL_FAILED", message: `file helper: ${message}`.slice(0, MAX_MESSAGE_CHARS) };
}

async function answer(root: string, req: unknown, grepTimeoutMs: number | undefined): Promise<Reply> {
  const r = (typeof req === "object" && req !== null ? req : {}) as Record<string, unknown>;
  const id = Number.isSafeInteger(r.id) ? (r.id as number) : null;
  try {
    if (id === null) throw new AppError("INVALID_PARAMS", "request id must be an integer");
    switch (r.op) {
      case "tool": {
        if (!TOOLS.includes(r.tool as FileToolName)) throw new AppError("TOOL_NOT_FOUND");
        const args = r.args;
        if (typeof args !== "object" || args === null || Array.isArray(args))
          throw new AppError("INVALID_PARAMS", "args must be an object");
        const opts = grepTimeoutMs ? { grepTimeoutMs } : {};
        return {
          id,
          ok: true,
          result: await runFileTool(r.tool as FileToolName, args as Record<string, unknown>, root, opts),
        };
      }
      case "previewFile":
        if (typeof r.path !== "string") throw new AppError("INVALID_PARAMS", "path must be a string");
        return { id, ok: true, result: await previewFile(root, r.path) };
      case "listPlanFiles":
        return { id, ok: true, result: { names: await listPlanFiles(root) } };
      default:
        throw new AppError("INVALID_PARAMS", "unknown op");
    }
  } catch (err) {
    return { id, ok: false, error: errorOf(err) };
  }
}

async function main(): Promise<void> {
  const given = process.env.PI_FILE_HELPER_WORKSPACE || process.cwd();
  const root = await fs.realpath(given).catch(() => null);
  if (root === null) {
    send({ ready: false, reason: `the workspace ${given} is not reachable as the sandbox user` });
    process.exit(1);
  }
  const grepTimeoutMs = Number(process.env.PI_FILE_HELPER_GREP_TIMEOUT_MS) || undefined;
  send({ ready: true, version: FILE_HELPER_PROTOCOL });
  const decoder = new FrameDecoder();
  let chain = Promise.resolve();
  process.stdin.on("data", (chunk: Buffer) => {
    let frames: unknown[];
    try {
      frames = decoder.push(chunk);
    } catch (err) {
      // Out of step with the host: say why and stop (the host starts a new helper).
      const message = err instanceof FrameError ? err.message : "bad frame";
      send({ id: null, ok: false, error: { code: "INVALID_PARAMS", message } });
      process.stdin.pause();
      chain = chain.then(() => process.exit(2));
      return;
    }
    for (const req of frames) chain = chain.then(async () => send(await answer(root, req, grepTimeoutMs)));
  });
  process.stdin.on("end", () => {
    chain = chain.then(() => process.exit(0));
  });
}

void main();
