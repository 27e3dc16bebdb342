// BrowserPreview `{url, waitMs?}` (Debian's Chromium through playwright-core, in the sandbox, every
// request routed host-side) and new_context `{summary?}` (docs/architecture.md "Tools"). Both are
// read-only in both modes.
import { randomBytes } from "node:crypto";
import { accessSync, constants, promises as fs } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium, type Route } from "playwright-core";
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

export const MAX_WAIT_MS = 10_000;
export const MAX_PREVIEW_TEXT_BYTES = 16 * 1024;
/** Bytes of one fetched response the page gets; the rest is not read. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024;
const LAUNCH_TIMEOUT_MS = 20_000;
const NAV_TIMEOUT_MS = 15_000;
/** Workspace files are shown to the page under this origin (a reserved name that never resolves). */
export const WORKSPACE_ORIGIN = "http://workspace.pi-preview.invalid";
const LOOPBACK_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);
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

export type PreviewTarget = { kind: "fetched"; url: string } | { kind: "workspace"; rel: string };

/** Is this an http(s) URL on the host's loopback? */
export function isLoopbackUrl(u: URL): boolean {
  return (u.protocol === "http:" || u.protocol === "https:") && LOOPBACK_HOSTS.has(u.hostname);
}

/** May the host fetch this URL for the page: loopback, or one of the project's listed origins. */
export function isFetchable(u: URL, allowedOrigins: readonly string[] = []): boolean {
  if (u.protocol !== "http:" && u.protocol !== "https:") return false;
  return isLoopbackUrl(u) || allowedOrigins.includes(u.origin);
}

const WILDCARD_HOSTS = new Set(["0.0.0.0", "[::]", "::"]);

/**
 * Does this URL reach one of these listeners (`host:port`)? A listener on a loopback or wildcard
 * address answers every loopback name on its port; any other is matched by host and port.
 */
export function reachesListener(u: URL, listeners: readonly string[]): boolean {
  if (u.protocol !== "http:" && u.protocol !== "https:") return false;
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return listeners.some((l) => {
    const at = l.lastIndexOf(":");
    if (at <= 0 || l.slice(at + 1) !== port) return false;
    const host = l.slice(0, at).toLowerCase();
    const name = host.startsWith("[") || !host.includes(":") ? host : `[${host}]`;
    if ((LOOPBACK_HOSTS.has(name) || WILDCARD_HOSTS.has(name)) && isLoopbackUrl(u)) return true;
    return name === u.hostname.toLowerCase();
  });
}

/** Decides where a BrowserPreview URL may go; throws the refusal. */
export async function previewTarget(
  raw: string,
  ctx: Pick<PreviewContext, "readWorkspaceFile" | "allowedOrigins">,
  listeners: readonly string[] = [],
): Promise<PreviewTarget> {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new AppError("INVALID_PARAMS", "url must be an absolute URL");
  }
  if (reachesListener(u, listeners))
    throw new AppError(
      "BROWSER_URL_NOT_ALLOWED",
      `${u.protocol}//${u.host} is a pi-host health and metrics listener: previews may not reach it`,
    );
  if (isFetchable(u, ctx.allowedOrigins)) return { kind: "fetched", url: u.href };
  if (u.protocol === "file:") {
    if (u.host && u.host !== "localhost")
      throw new AppError("BROWSER_URL_NOT_ALLOWED", "file URLs must not name a host");
    const { rel } = await ctx.readWorkspaceFile(fileURLToPath(u));
    return { kind: "workspace", rel };
  }
  throw new AppError(
    "BROWSER_URL_NOT_ALLOWED",
    `${u.protocol}//${u.host} is not allowed: only http(s)://127.0.0.1, localhost, [::1], workspace file:// URLs and the project's preview origins`,
  );
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

/**
 * Fetches a loopback or listed-origin request for the page and fulfils it. The body is read as a
 * stream and cut at maxBytes (MAX_BODY_BYTES; the rest is never read: the connection is dropped), within
 * NAV_TIMEOUT_MS: a hostile or endless server costs the host bounded memory and time.
 */
async function fetchForPage(route: Route, maxBytes: number): Promise<{ truncated: boolean }> {
  const req = route.request();
  const headers = { ...req.headers() };
  delete headers["accept-encoding"];
  const res = await fetch(req.url(), {
    method: req.method(),
    headers,
    redirect: "manual",
    signal: AbortSignal.timeout(NAV_TIMEOUT_MS),
  });
  const chunks: Buffer[] = [];
  let size = 0;
  let truncated = false;
  if (res.body) {
    // Node's stream (DOM typings seen by tests would hide its async iterator).
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      const part = Buffer.from(chunk).subarray(0, maxBytes - size);
      chunks.push(part);
      size += part.length;
      if (size >= maxBytes) {
        truncated = true;
        break; // cancels the body: nothing more is read
      }
    }
  }
  const out: Record<string, string> = {};
  res.headers.forEach((v, k) => {
    if (k !== "content-encoding" && k !== "content-length" && k !== "transfer-encoding") out[k] = v;
  });
  await route.fulfill({ status: res.status, headers: out, body: Buffer.concat(chunks) });
  return { truncated };
}

/**
 * Runs a BrowserPreview call. Refusals of the URL throw (AppError); sandbox failures are results.
 * The browser runs in the bubblewrap sandbox as the sandbox user (setpriv + bwrap through a generated
 * wrapper script that playwright starts as its "executable"; the --remote-debugging-pipe fds 3 and 4
 * pass through): no network, a private /tmp with the profile, /dev/shm, /proc, and neither the
 * workspace nor the scratch folder. Every request of the page is served host-side by playwright's
 * request routing: GET/HEAD to http(s)://127.0.0.1|localhost|[::1] and to the origins the project
 * lists (compared by canonical origin) are fetched with Node's fetch, redirects not followed (the
 * browser's next request is routed again); workspace files (a file:// URL inside the workspace,
 * shown under WORKSPACE_ORIGIN) are read through the tool runner's path confinement; everything else
 * is aborted and counted. The screenshot goes into the session's scratch folder
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
  let browser: Awaited<ReturnType<typeof chromium.launch>> | null = null;
  let bounds: (() => Promise<void>) | null = null;
  const onAbort = () => void browser?.close().catch(() => {});
  ctx.signal?.addEventListener("abort", onAbort, { once: true });
  try {
    try {
      const wrapper = await writeWrapper(tmp, settings, sessionId);
      bounds = wrapper.release;
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
    const blocked: string[] = [];
    const truncated: string[] = [];
    let served = 0;
    await context.route("**/*", async (route) => {
      const req = route.request();
      let u: URL;
      try {
        u = new URL(req.url());
      } catch {
        blocked.push(req.url());
        return route.abort("blockedbyclient");
      }
      const method = req.method();
      try {
        if (`${u.protocol}//${u.host}` === WORKSPACE_ORIGIN && (method === "GET" || method === "HEAD")) {
          let rel: string;
          try {
            rel = decodeURIComponent(u.pathname).replace(/^\/+/, "") || ".";
          } catch {
            return route.fulfill({ status: 400, body: "bad path" });
          }
          try {
            const { rel: clean, bytes: body } = await ctx.readWorkspaceFile(rel);
            served++;
            return route.fulfill({ status: 200, contentType: mimeOf(clean), body });
          } catch (err) {
            const code = err instanceof AppError ? err.code : "FILE_NOT_FOUND";
            return route.fulfill({ status: code === "FILE_NOT_FOUND" ? 404 : 403, body: code });
          }
        }
        if (
          isFetchable(u, ctx.allowedOrigins) &&
          !reachesListener(u, listeners) &&
          (method === "GET" || method === "HEAD")
        ) {
          served++;
          if ((await fetchForPage(route, ctx.maxBodyBytes ?? MAX_BODY_BYTES)).truncated)
            truncated.push(req.url());
          return;
        }
      } catch {
        return route.abort("failed").catch(() => {});
      }
      blocked.push(req.url());
      return route.abort("blockedbyclient");
    });
    const page = await context.newPage();
    const navUrl =
      target.kind === "fetched"
        ? target.url
        : `${WORKSPACE_ORIGIN}/${target.rel.split("/").map(encodeURIComponent).join("/")}`;
    try {
      await page.goto(navUrl, { waitUntil: "load", timeout: NAV_TIMEOUT_MS });
      if (waitMs) await page.waitForTimeout(waitMs);
    } catch (err) {
      if (ctx.signal?.aborted)
        return result("TURN_ABORTED", "the call was aborted; the browser was closed", {});
      const message = err instanceof Error ? err.message.split("\n")[0] : String(err);
      return result("TOOL_FAILED", `the page did not load: ${message}`, { url, blocked });
    }
    const title = await page.title();
    let text = await page.evaluate<string>("document.body ? document.body.innerText : ''").catch(() => "");
    const full = Buffer.byteLength(text);
    if (full > MAX_PREVIEW_TEXT_BYTES)
      text = `${Buffer.from(text).subarray(0, MAX_PREVIEW_TEXT_BYTES).toString("utf8")}\n[text truncated: ${full} bytes]`;
    const png = await page.screenshot({ type: "png" });
    const user = await lookupSandboxUser(settings.user);
    const scratch = await prepareScratch(settings, sessionId, user);
    const dir = path.join(scratch, "previews");
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await fs.chown(dir, user.uid, user.gid);
    const screenshotPath = path.join(dir, `preview-${Date.now()}-${randomBytes(4).toString("hex")}.png`);
    await fs.writeFile(screenshotPath, png, { mode: 0o600, flag: "wx" });
    await fs.chown(screenshotPath, user.uid, user.gid);
    return result(null, `${title}\n\n${text}`, {
      title,
      url,
      screenshotPath,
      blocked: blocked.slice(0, 50),
      blockedCount: blocked.length,
      served,
      truncated: truncated.slice(0, 50),
    });
  } finally {
    ctx.signal?.removeEventListener("abort", onAbort);
    await browser?.close().catch(() => {});
    await bounds?.();
    await fs.rm(tmp, { recursive: true, force: true });
  }
}
