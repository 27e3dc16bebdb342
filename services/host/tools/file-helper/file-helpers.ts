// The host side of the file helper: one warm helper per (session, workspace), each a sandboxed
// node process running helper-main.ts as the sandbox user (docs/architecture.md "Tools"). Requests
// are queued one at a time per helper; a helper is stopped when idle, when over the maximum count
// (least recently used first), on a call timeout and on an abort. The helper is untrusted: every
// reply is checked here, and anything wrong with it is a refusal, never a host crash.
import { promises as fs } from "node:fs";
import { AppError } from "../../../protocol/app-error.ts";
import { type SandboxProcess, type SandboxSettings, startSandbox } from "../sandbox.ts";
import { sandboxUnavailable } from "../sandbox-user.ts";
import { encodeFrame, FILE_HELPER_PROTOCOL, FrameDecoder } from "./frames.ts";
import { helperBundle } from "./helper-bundle.ts";
import {
  checkResult,
  type FileHelperRequest,
  type FileHelperResult,
  helperError,
  isPlainObject,
} from "./helper-replies.ts";

export type {
  FileHelperRequest,
  FileHelperResult,
  PlanFilesResult,
  PreviewFileResult,
} from "./helper-replies.ts";

export interface FileHelpersOptions {
  /** A helper unused this long is stopped (default 60 s). */
  idleMs?: number;
  /** At most this many helpers run; the least recently used idle one is stopped first (default 32). */
  maxHelpers?: number;
  /** A call's bound once sent (default 30 s): past it the helper is killed, TOOL_TIMEOUT. */
  callTimeoutMs?: number;
  /** A helper's bound to start and say it is ready (default 15 s). */
  startTimeoutMs?: number;
  /** Grep's own bound inside the helper (default there: 10 s). */
  grepTimeoutMs?: number;
}

export interface FileHelperCallOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
}

export interface FileHelpers {
  /** Runs one request in the (session, workspace) helper; refusals are AppError. */
  call<R extends FileHelperRequest>(
    sessionId: string,
    workspace: string,
    request: R,
    opts?: FileHelperCallOptions,
  ): Promise<FileHelperResult<R>>;
  /** Ends every helper. */
  close(): Promise<void>;
  /** Helpers running now. */
  size(): number;
}

const MAX_STDERR_CHARS = 4000;

interface Helper {
  proc: SandboxProcess;
  nextId: number;
  /** Why it is gone (null while alive). */
  dead: string | null;
  stderr: string;
  inbox: unknown[];
  waiter: { resolve: (frame: unknown) => void; reject: (err: AppError) => void } | null;
  closed: Promise<void>;
}

interface Slot {
  key: string;
  helper: Helper | null;
  chain: Promise<unknown>;
  queued: number;
  lastUsed: number;
  idle: NodeJS.Timeout | null;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * Resolves once `pid` has exited (gone or a zombie), at most `ms` later. The sandbox's first process
 * is its PID namespace's init, which exits only after every other process in it has.
 */
async function exited(pid: number | null, ms: number): Promise<void> {
  const until = Date.now() + ms;
  while (pid && Date.now() < until) {
    const stat = await fs.readFile(`/proc/${pid}/stat`, "utf8").catch(() => null);
    if (stat === null || /\)\s+[ZX]\s/.test(stat)) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One createFileHelpers' state: its configuration and bounds, its slots, and whether it is closed. */
interface HelperPool {
  settings: SandboxSettings;
  opts: FileHelpersOptions;
  idleMs: number;
  maxHelpers: number;
  callTimeoutMs: number;
  startTimeoutMs: number;
  slots: Map<string, Slot>;
  closed: boolean;
}

function kill(h: Helper, reason: string): void {
  if (h.dead) return;
  h.dead = reason;
  const first = h.proc.firstPid();
  try {
    if (first) process.kill(first, "SIGKILL");
  } catch {}
  h.proc.child.kill("SIGKILL");
  h.waiter?.reject(sandboxUnavailable(reason));
  h.waiter = null;
}

function stop(pool: HelperPool, slot: Slot, reason: string): void {
  if (slot.idle) clearTimeout(slot.idle);
  slot.idle = null;
  if (slot.helper) kill(slot.helper, reason);
  slot.helper = null;
  if (slot.queued === 0) pool.slots.delete(slot.key);
}

function next(h: Helper): Promise<unknown> {
  if (h.inbox.length) return Promise.resolve(h.inbox.shift());
  if (h.dead) return Promise.reject(sandboxUnavailable(h.dead));
  return new Promise((resolve, reject) => {
    h.waiter = { resolve, reject };
  });
}

function withBound<T>(p: Promise<T>, ms: number, onTimeout: () => AppError, signal?: AbortSignal) {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => finish(() => reject(new AppError("TURN_ABORTED", "the call was aborted")));
    const timer = setTimeout(() => finish(() => reject(onTimeout())), ms);
    const finish = (f: () => void) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      f();
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    if (signal?.aborted) onAbort();
    p.then(
      (v) => finish(() => resolve(v)),
      (e) => finish(() => reject(e)),
    );
  });
}

/** The helper's sandbox, started: node running the helper bundle as the sandbox user. */
async function spawnHelper(pool: HelperPool, sessionId: string, workspace: string): Promise<SandboxProcess> {
  const { settings, opts } = pool;
  const bundle = await helperBundle(settings.dataDir).catch((err: Error) => {
    throw sandboxUnavailable(`the file helper could not be built: ${err.message}`);
  });
  return startSandbox({
    workspace,
    sessionId,
    settings,
    command: `exec /usr/bin/node --max-old-space-size=512 ${quote(bundle.file)}`,
    roBinds: [bundle.dir],
    stdin: true,
    setenv: {
      PI_FILE_HELPER_WORKSPACE: workspace,
      ...(opts.grepTimeoutMs ? { PI_FILE_HELPER_GREP_TIMEOUT_MS: String(opts.grepTimeoutMs) } : {}),
    },
  });
}

/** Hears the helper's stderr (kept for the refusal), its reply frames and its end. */
function listen(h: Helper): void {
  const { proc } = h;
  const decoder = new FrameDecoder();
  proc.stderr.setEncoding("utf8");
  proc.stderr.on("data", (d: string) => {
    h.stderr = (h.stderr + d).slice(-MAX_STDERR_CHARS);
  });
  proc.stderr.on("error", () => {});
  proc.stdout.on("error", () => {});
  proc.stdout.on("data", (chunk: Buffer) => {
    if (h.dead) return;
    let frames: unknown[];
    try {
      frames = decoder.push(chunk);
    } catch (err) {
      return kill(h, `the file helper sent a malformed frame: ${(err as Error).message}`);
    }
    for (const f of frames) {
      if (h.waiter) {
        const w = h.waiter;
        h.waiter = null;
        w.resolve(f);
      } else if (h.inbox.length < 1) h.inbox.push(f);
      else return kill(h, "the file helper sent a reply nobody asked for");
    }
  });
  proc.child.on("close", (code, sig) => {
    const why = h.stderr.trim() ? `: ${h.stderr.trim()}` : "";
    kill(h, `the file helper ended (${sig ?? `exit ${code}`})${why}`);
  });
}

/** Resolves once the sandbox is up and the helper said it is ready in this protocol's version. */
async function helperReady(h: Helper): Promise<void> {
  const { proc } = h;
  if (!(await proc.started)) {
    await withBound(proc.outputEnded, 1000, () => sandboxUnavailable("")).catch(() => {});
    const reason = proc.failure() ?? (h.stderr.trim() || "bwrap did not start the sandbox");
    throw sandboxUnavailable(`the file helper's sandbox did not start: ${reason}`);
  }
  const hello = await next(h);
  if (isPlainObject(hello) && hello.ready === true && hello.version === FILE_HELPER_PROTOCOL) return;
  const said = isPlainObject(hello) && typeof hello.reason === "string" ? hello.reason.slice(0, 500) : null;
  throw sandboxUnavailable(said ?? "the file helper did not say it is ready");
}

async function startHelper(
  pool: HelperPool,
  sessionId: string,
  workspace: string,
  signal?: AbortSignal,
): Promise<Helper> {
  const { startTimeoutMs } = pool;
  const proc = await spawnHelper(pool, sessionId, workspace);
  const h: Helper = {
    proc,
    nextId: 1,
    dead: null,
    stderr: "",
    inbox: [],
    waiter: null,
    closed: new Promise<void>((resolve) => proc.child.on("close", () => resolve())).then(() =>
      exited(proc.firstPid(), 2000),
    ),
  };
  listen(h);
  const ready = helperReady(h);
  try {
    await withBound(
      ready,
      startTimeoutMs,
      () => sandboxUnavailable(`the file helper was not ready within ${startTimeoutMs} ms`),
      signal,
    );
  } catch (err) {
    kill(h, err instanceof Error ? err.message : "start failed");
    throw err;
  }
  return h;
}

const live = (pool: HelperPool) => [...pool.slots.values()].filter((s) => s.helper && !s.helper.dead);

function evict(pool: HelperPool, keep: Slot): void {
  const running = live(pool);
  if (running.length <= pool.maxHelpers) return;
  const idle = running.filter((s) => s !== keep && s.queued === 0).sort((a, b) => a.lastUsed - b.lastUsed);
  for (const s of idle.slice(0, running.length - pool.maxHelpers))
    stop(pool, s, "stopped: too many file helpers");
}

async function runRequest(
  pool: HelperPool,
  slot: Slot,
  sessionId: string,
  workspace: string,
  req: FileHelperRequest,
  o: FileHelperCallOptions,
) {
  if (pool.closed) throw sandboxUnavailable("the file helpers are closed");
  if (o.signal?.aborted) throw new AppError("TURN_ABORTED", "the call was aborted before it started");
  if (slot.idle) clearTimeout(slot.idle);
  slot.idle = null;
  if (!slot.helper || slot.helper.dead) {
    slot.helper = null;
    slot.helper = await startHelper(pool, sessionId, workspace, o.signal);
    evict(pool, slot);
  }
  const h = slot.helper;
  const id = h.nextId++;
  const frame = encodeFrame({ id, ...req });
  h.proc.stdin!.write(frame);
  const timeoutMs = o.timeoutMs ?? pool.callTimeoutMs;
  let reply: unknown;
  try {
    reply = await withBound(
      next(h),
      timeoutMs,
      () => new AppError("TOOL_TIMEOUT", `the file helper did not answer within ${timeoutMs} ms`),
      o.signal,
    );
  } catch (err) {
    kill(h, err instanceof AppError ? err.message : "call failed");
    throw err;
  }
  if (!isPlainObject(reply) || reply.id !== id) {
    kill(h, "the file helper answered out of turn");
    throw sandboxUnavailable("the file helper sent a malformed reply");
  }
  if (reply.ok === false) throw helperError(reply.error);
  const result = reply.ok === true ? checkResult(req.op, reply.result) : null;
  if (result === null) {
    kill(h, "the file helper sent a malformed result");
    throw sandboxUnavailable("the file helper sent a malformed reply");
  }
  return result;
}

/** Queues the request behind the (session, workspace) slot's earlier ones; an idle slot's helper stops later. */
function callHelper<R extends FileHelperRequest>(
  pool: HelperPool,
  sessionId: string,
  workspace: string,
  request: R,
  o: FileHelperCallOptions = {},
): Promise<FileHelperResult<R>> {
  if (pool.closed) return Promise.reject(sandboxUnavailable("the file helpers are closed"));
  const key = `${sessionId}\0${workspace}`;
  let slot = pool.slots.get(key);
  if (!slot) {
    slot = { key, helper: null, chain: Promise.resolve(), queued: 0, lastUsed: Date.now(), idle: null };
    pool.slots.set(key, slot);
  }
  const s = slot;
  s.queued++;
  const p = s.chain.then(() => runRequest(pool, s, sessionId, workspace, request, o));
  s.chain = p.catch(() => {});
  return p.finally(() => {
    s.queued--;
    s.lastUsed = Date.now();
    if (s.queued > 0) return;
    if (!s.helper || s.helper.dead || pool.closed) return stop(pool, s, "stopped");
    s.idle = setTimeout(() => stop(pool, s, "stopped: idle"), pool.idleMs);
    s.idle.unref();
  }) as Promise<FileHelperResult<R>>;
}

async function closeHelpers(pool: HelperPool): Promise<void> {
  pool.closed = true;
  const all = [...pool.slots.values()];
  const waits = all.flatMap((s) => (s.helper ? [s.helper.closed] : []));
  for (const s of all) stop(pool, s, "stopped: the file helpers are closed");
  pool.slots.clear();
  await Promise.race([Promise.all(waits), new Promise((r) => setTimeout(r, 5000).unref())]);
}

/** The host's file helpers over one sandbox configuration. */
export function createFileHelpers(settings: SandboxSettings, opts: FileHelpersOptions = {}): FileHelpers {
  const pool: HelperPool = {
    settings,
    opts,
    idleMs: opts.idleMs ?? 60_000,
    maxHelpers: opts.maxHelpers ?? 32,
    callTimeoutMs: opts.callTimeoutMs ?? 30_000,
    startTimeoutMs: opts.startTimeoutMs ?? 15_000,
    slots: new Map<string, Slot>(),
    closed: false,
  };
  return {
    call: (sessionId, workspace, request, o) => callHelper(pool, sessionId, workspace, request, o),
    close: () => closeHelpers(pool),
    size: () => live(pool).length,
  };
}
