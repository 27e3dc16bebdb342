// Where the console connects, fixed at build (or dev-serve) time by vite.config.ts from PI_WEB_WS_URL
// and PI_WEB_PREFIX; the CSP's connect-src names the same URL, so no other server can be reached.

export interface WebConfig {
  /** The NATS WebSocket URL, e.g. ws://127.0.0.1:8081. */
  wsUrl: string;
  /** The subject prefix (`pi`). */
  prefix: string;
}

declare const __PI_WEB_CONFIG__: WebConfig | undefined;

export const DEFAULT_CONFIG: WebConfig = { wsUrl: "ws://127.0.0.1:8081", prefix: "pi" };

export const webConfig: WebConfig =
  typeof __PI_WEB_CONFIG__ !== "undefined" ? __PI_WEB_CONFIG__ : DEFAULT_CONFIG;
