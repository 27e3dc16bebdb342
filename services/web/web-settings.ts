// The console's build-time settings (PI_WEB_WS_URL, PI_WEB_PREFIX) and the Content Security Policy
// that names the WebSocket URL as the page's only connection. Read by vite.config.ts (Node), never
// by the page; a value that could widen the policy is refused, so the build stops instead.
import { PREFIX_TOKEN } from "../protocol/tokens.ts";

export interface WebSettings {
  wsUrl: string;
  prefix: string;
}

export const DEFAULT_WS_URL = "ws://127.0.0.1:8081";

/** PI_WEB_WS_URL (a ws:// or wss:// URL, default ws://127.0.0.1:8081) and PI_WEB_PREFIX (default `pi`). */
export function readWebSettings(env: Record<string, string | undefined>): WebSettings {
  const rawUrl = env.PI_WEB_WS_URL || DEFAULT_WS_URL;
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    throw new Error(`PI_WEB_WS_URL must be a ws:// or wss:// URL, got ${JSON.stringify(rawUrl)}`);
  }
  if (url.protocol !== "ws:" && url.protocol !== "wss:")
    throw new Error(`PI_WEB_WS_URL must be a ws:// or wss:// URL, got ${JSON.stringify(rawUrl)}`);
  if (url.username || url.password || url.search || url.hash)
    throw new Error(
      `PI_WEB_WS_URL must not carry credentials, a query or a fragment: ${JSON.stringify(rawUrl)}`,
    );
  // The URL goes into the CSP as one source expression: nothing that could end it or add another.
  if (/[\s;,'"]/.test(rawUrl))
    throw new Error(`PI_WEB_WS_URL must not contain spaces, quotes, commas or semicolons`);
  const prefix = env.PI_WEB_PREFIX || "pi";
  if (!PREFIX_TOKEN.test(prefix))
    throw new Error(
      `PI_WEB_PREFIX must be one subject token (letters, digits, _ and -, at most 32), got ${JSON.stringify(prefix)}`,
    );
  // As given (a trailing slash kept or not): the page connects to exactly this URL.
  return { wsUrl: rawUrl, prefix };
}

/** The page's policy: only its own scripts, styles and images (and data: images), connections only to the WebSocket. */
export function contentSecurityPolicy(wsUrl: string): string {
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src ${wsUrl}`,
    "frame-src 'none'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join("; ");
}
