// BrowserPreview `{url, waitMs?}` (Debian's Chromium through playwright-core, in the sandbox, every
// request routed host-side) and new_context `{summary?}` (docs/architecture.md "Tools"). Both are
// read-only in both modes.
import { randomBytes } from "node:crypto";
import { accessSync, constants, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import type { chromium as Chromium, Route } from "playwright-core";
import { toolResult } from "../../protocol/result.ts";
import { AppError } from "../../protocol/app-error.ts";
import type { ErrorCode } from "../../protocol/error-codes.ts";
import type { ToolExecuteResult } from "../../protocol/schemas.ts";
import {
  deviceBinds,
  findProgram,
  lookupSandboxUser,
  NO_USER_NAMESPACES,
  prepareScratch,
  type SandboxSettings,
  systemBinds,
} from "./sandbox.ts";
import { OOM_SCORE_ADJ, sandboxLimits } from "./sandbox-limits.ts";
import { fetchListed, HostItselfError } from "./preview-fetch.ts";
import { isFetchable, isLoopbackUrl, previewTarget, reachesListener } from "./preview-origins.ts";

export { reachesListener } from "./preview-origins.ts";

export const MAX_WAIT_MS = 10_000;
export const MAX_PREVIEW_TEXT_BYTES = 16 * 1024;
/** Bytes of one fetched response the page gets; the rest is not read. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;
const LAUNCH_TIMEOUT_MS = 20_000;
const NAV_TIMEOUT_MS = 15_000;
/** Workspace files are shown to the page under this origin (a reserved name that never resolves). */
export const WORKSPACE_ORIGIN = "http://workspace.pi-preview.invalid";
const CHROMIUM_CANDIDATES = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"];
/** Headless Chromium's flags on this kind of machine (its closed network refuses background traffic). */
export const CHROMIUM_FLAGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--disable-crash-reporter",
  "--disable-breakpad",
];
const MIME: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".htm": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/plain; charset=utf-8",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
};

const result = (code: ErrorCode | null, text: string, details: Record<string, unknown>) =>
  toolResult(code, text, details);

/** new_context: context only, no file touched; the host serves the compacted context from the next turn on (session-store.ts transcriptPage). */
export function runNewContext(args: Record<string, unknown>): ToolExecuteResult {
  const { summary } = args;
  if (summary !== undefined && typeof summary !== "string")
    return result("INVALID_PARAMS", "summary must be a string", { field: "summary" });
  return result(null, "The context was compacted; continue from the summary.", {
    compacted: true,
    ...(summary ? { summary } : {}),
  });
}

export interface PreviewContext {
  workspace: string;
  /**
   * Reads a workspace file for the page as Read would confine it (throws PATH_OUTSIDE_WORKSPACE,
   * WORKSPACE_PATH_DENIED, FILE_NOT_FOUND): the session's file helper, as the sandbox user.
   */
  readWorkspaceFile: (p: string) => Promise<{ rel: string; bytes: Buffer }>;
  sessionId?: string;
  signal?: AbortSignal;
  /** The sandbox's configuration (the tool runner's, read once at start). */
  settings: SandboxSettings;
  /** The project's listed origins (canonical `scheme://host[:port]`), loadable besides loopback. */
  allowedOrigins?: readonly string[];
  /** Bytes of one fetched response the page gets (MAX_BODY_BYTES unless a caller asks for fewer). */
  maxBodyBytes?: number;
  /**
   * The pi-host HTTP listeners (`host:port`: this host's, PI_HTTP_BLOCK, the other hosts' rows),
   * read at each preview: the page may not reach them, loopback or listed origin alike.
   */
  blockedListeners?: () => Promise<readonly string[]>;
}

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", "'\\''")}'`;
}

/**
 * The wrapper playwright starts (as root): it joins the browser's own cgroup and sets its
 * oom_score_adj (sandbox-limits.ts; exit 125 if it cannot), then execs Chromium in the sandbox with
 * playwright's arguments. `release` kills what is left in that cgroup and removes it.
 */
async function writeWrapper(dir: string, settings: SandboxSettings, label: string) {
  const bwrap = findProgram("bwrap");
  const setpriv = findProgram("setpriv");
  if (!bwrap) throw new AppError("SANDBOX_UNAVAILABLE", "bwrap (Debian package bubblewrap) is not installed");
  if (!setpriv) throw new AppError("SANDBOX_UNAVAILABLE", "setpriv (util-linux) is not installed");
  const chrome = CHROMIUM_CANDIDATES.find(isExecutable);
  if (!chrome)
    throw new AppError("SANDBOX_UNAVAILABLE", "chromium (Debian package chromium) is not installed");
  const user = await lookupSandboxUser(settings.user);
  const sandbox = [
    setpriv,
    `--reuid=${user.uid}`,
    `--regid=${user.gid}`,
    "--init-groups",
    "--inh-caps=-all",
    "--",
    bwrap,
    ...systemBinds(["fonts", "chromium", "chromium.d"]),
    ...NO_USER_NAMESPACES,
    "--tmpfs",
    "/tmp",
    "--proc",
    "/proc",
    ...deviceBinds(),
    "--chdir",
    "/tmp",
    "--clearenv",
    "--setenv",
    "PATH",
    "/usr/bin:/bin",
    "--setenv",
    "HOME",
    "/tmp",
    "--setenv",
    "TMPDIR",
    "/tmp",
    "--setenv",
    "LANG",
    "C.UTF-8",
    "--",
    chrome,
  ];
  const bounds = await (await sandboxLimits(settings)).create(`browser-${label}`);
  const join = bounds.procsFiles.map((f) => `echo $$ > ${shellQuote(f)} || exit 125\n`).join("");
  // Playwright's profile folder is a host path; the browser gets a fresh one in its private /tmp.
  const script = `#!/bin/bash
echo ${OOM_SCORE_ADJ} > /proc/self/oom_score_adj || exit 125
${join}args=()
for a in "$@"; do
  case "$a" in
    --user-data-dir=*) args+=("--user-data-dir=/tmp/profile") ;;
    *) args+=("$a") ;;
  esac
done
exec ${sandbox.map(shellQuote).join(" ")} "\${args[@]}"
`;
  const file = path.join(dir, "chromium-sandboxed");
  await fs.writeFile(file, script, { mode: 0o700 }).catch(async (err) => {
    await bounds.release();
    throw err;
  });
  return { file, release: bounds.release };
}

function isExecutable(p: string): boolean {
  try {
    accessSync(p, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function mimeOf(rel: string): string {
  return MIME[path.extname(rel).toLowerCase()] ?? "application/octet-stream";
}

/** Fetches a listed-origin request for the page (preview-fetch.ts) and fulfils it. */
async function fetchForPage(route: Route, maxBytes: number): Promise<{ truncated: boolean }> {
  const req = route.request();
  const res = await fetchListed(req.url(), req.method(), req.headers(), maxBytes, NAV_TIMEOUT_MS);
  await route.fulfill({ status: res.status, headers: res.headers, body: res.body });
  return { truncated: res.truncated };
}

/** What one preview's request routing shares: the call's context and what it blocked and served. */
interface Routing {
  ctx: PreviewContext;
  listeners: readonly string[];
  blocked: string[];
  truncated: string[];
  served: number;
}

/** A request of the page for a workspace file (under WORKSPACE_ORIGIN), read through Read's confinement. */
async function serveWorkspaceFile(route: Route, u: URL, r: Routing): Promise<void> {
  let rel: string;
  try {
    rel = decodeURIComponent(u.pathname).replace(/^\/+/, "") || ".";
  } catch {
    return route.fulfill({ status: 400, body: "bad path" });
  }
  try {
    const { rel: clean, bytes: body } = await r.ctx.readWorkspaceFile(rel);
    r.served++;
    return route.fulfill({ status: 200, contentType: mimeOf(clean), body });
  } catch (err) {
    const code = err instanceof AppError ? err.code : "FILE_NOT_FOUND";
    return route.fulfill({ status: code === "FILE_NOT_FOUND" ? 404 : 403, body: code });
  }
}

/**
 * Every request of the page, in this order: a workspace file is read; a pi-host listener is
 * blocked; loopback goes on to the browser itself, which resolves it in its own sandbox's network
 * namespace (an empty loopback, never the host's); a listed origin is fetched by the host
 * (GET/HEAD, never to the machine itself); everything else is blocked and listed.
 */
async function routeRequest(route: Route, r: Routing): Promise<void> {
  const req = route.request();
  const method = req.method();
  const readOnly = method === "GET" || method === "HEAD";
  let u: URL;
  try {
    u = new URL(req.url());
  } catch {
    r.blocked.push(req.url());
    return route.abort("blockedbyclient");
  }
  try {
    if (`${u.protocol}//${u.host}` === WORKSPACE_ORIGIN && readOnly)
      return await serveWorkspaceFile(route, u, r);
    if (!reachesListener(u, r.listeners)) {
      if (isLoopbackUrl(u)) return await route.continue();
      if (isFetchable(u, r.ctx.allowedOrigins) && readOnly) {
        const { truncated } = await fetchForPage(route, r.ctx.maxBodyBytes ?? MAX_BODY_BYTES);
        r.served++;
        if (truncated) r.truncated.push(req.url());
        return;
      }
    }
  } catch (err) {
    // A listed name that resolves to the machine itself is blocked like any other origin.
    if (!(err instanceof HostItselfError)) return route.abort("failed").catch(() => {});
  }
  r.blocked.push(req.url());
  return route.abort("blockedbyclient").catch(() => {});
}

/** The PNG in the session's scratch folder (owned by the sandbox user, so Bash can look at it). */
async function saveScreenshot(settings: SandboxSettings, sessionId: string, png: Buffer): Promise<string> {
  const user = await lookupSandboxUser(settings.user);
  const scratch = await prepareScratch(settings, sessionId, user);
  const dir = path.join(scratch, "previews");
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  await fs.chown(dir, user.uid, user.gid);
  const file = path.join(dir, `preview-${Date.now()}-${randomBytes(4).toString("hex")}.png`);
  await fs.writeFile(file, png, { mode: 0o600, flag: "wx" });
  await fs.chown(file, user.uid, user.gid);
  return file;
}

/**
 * Runs a BrowserPreview call. Refusals of the URL throw (AppError); sandbox failures are results.
 * The browser runs in the bubblewrap sandbox as the sandbox user (setpriv + bwrap through a generated
 * wrapper script that playwright starts as its "executable"; the --remote-debugging-pipe fds 3 and 4
 * pass through): no network, a private /tmp with the profile, /dev/shm, /proc, and neither the
 * workspace nor the scratch folder. Every request of the page goes through playwright's request
 * routing (routeRequest): loopback URLs (`localhost`, `127.0.0.0/8`, `[::1]`, ...) stay in the
 * browser's own network namespace, whose loopback holds nothing of the host's; GET/HEAD to the
 * origins the project lists (compared by canonical origin) are fetched by the host, redirects not
 * followed (the browser's next request is routed again); workspace files (a file:// URL inside the
 * workspace, shown under WORKSPACE_ORIGIN) are read through the tool runner's path confinement;
 * everything else is aborted and counted. The screenshot goes into the session's scratch folder
 * (`<PI_DATA_DIR>/scratch/<sessionId>/previews/`, owned by the sandbox user), never the workspace.
 */
export async function runBrowserPreview(
  args: Record<string, unknown>,
  ctx: PreviewContext,
): Promise<ToolExecuteResult> {
  const { url, waitMs } = args;
  if (typeof url !== "string" || url === "")
    return result("INVALID_PARAMS", "url must be a non-empty string", { field: "url" });
  if (
    waitMs !== undefined &&
    (typeof waitMs !== "number" || !Number.isInteger(waitMs) || waitMs < 0 || waitMs > MAX_WAIT_MS)
  )
    return result("INVALID_PARAMS", `waitMs must be an integer from 0 to ${MAX_WAIT_MS}`, {
      field: "waitMs",
    });
  // Read once per preview: the other hosts' listeners come from their rows (main.ts).
  const listeners = (await ctx.blockedListeners?.()) ?? [];
  const target = await previewTarget(url, ctx, listeners);
  if (ctx.signal?.aborted) return result("TURN_ABORTED", "the call was aborted before it started", {});
  const { settings } = ctx;
  const sessionId = ctx.sessionId ?? `call-${randomBytes(9).toString("base64url")}`;
  const tmp = await fs.mkdtemp(path.join(os.tmpdir(), "pihost-browser-"));
  let browser: Awaited<ReturnType<typeof Chromium.launch>> | null = null;
  let bounds: (() => Promise<void>) | null = null;
  const onAbort = () => void browser?.close().catch(() => {});
  ctx.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    try {
      const wrapper = await writeWrapper(tmp, settings, sessionId);
      bounds = wrapper.release;
      // Loaded on first use: playwright-core costs the host about 0.7 s of CPU at every start otherwise.
      const { chromium } = await import("playwright-core");
      browser = await chromium.launch({
        executablePath: wrapper.file,
        args: CHROMIUM_FLAGS,
        timeout: LAUNCH_TIMEOUT_MS,
        env: {},
      });
    } catch (err) {
      const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
      return result("SANDBOX_UNAVAILABLE", `the browser sandbox did not start: ${message}`, {
        reason: message,
      });
    }
    const context = await browser.newContext({
      serviceWorkers: "block",
      viewport: { width: 1280, height: 800 },
    });
    const routing: Routing = { ctx, listeners, blocked: [], truncated: [], served: 0 };
    await context.route("**/*", (route) => routeRequest(route, routing));
    const page = await context.newPage();
    const navUrl =
      target.kind === "workspace"
        ? `${WORKSPACE_ORIGIN}/${target.rel.split("/").map(encodeURIComponent).join("/")}`
        : target.url;
    try {
      await page.goto(navUrl, { waitUntil: "load", timeout: NAV_TIMEOUT_MS });
      if (waitMs) await page.waitForTimeout(waitMs);
    } catch (err) {
      if (ctx.signal?.aborted)
        return result("TURN_ABORTED", "the call was aborted; the browser was closed", {});
      const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
      // Loopback is the browser sandbox's own network namespace: nothing of the host listens there.
      const where =
        target.kind === "sandbox"
          ? " (loopback is the browser sandbox's own: nothing of the host's is reachable)"
          : "";
      return result("TOOL_FAILED", `the page did not load: ${message}${where}`, {
        url,
        blocked: routing.blocked,
      });
    }
    const title = await page.title();
    let text = await page.evaluate<string>("document.body ? document.body.innerText : ''").catch(() => "");
    const full = Buffer.byteLength(text);
    if (full > MAX_PREVIEW_TEXT_BYTES)
      text = `${Buffer.from(text).subarray(0, MAX_PREVIEW_TEXT_BYTES).toString("utf8")}\n[text truncated: ${full} bytes]`;
    const screenshotPath = await saveScreenshot(settings, sessionId, await page.screenshot({ type: "png" }));
    return result(null, `${title}\n\n${text}`, {
      title,
      url,
      screenshotPath,
      blocked: routing.blocked.slice(0, 50),
      blockedCount: routing.blocked.length,
      served: routing.served,
      truncated: routing.truncated.slice(0, 50),
    });
  } finally {
    ctx.signal?.removeEventListener("abort", onAbort);
    await browser?.close().catch(() => {});
    await bounds?.();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}
