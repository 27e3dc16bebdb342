// Debian's Chromium driven by playwright-core (it downloads no browser), headless, with the flags
// this machine needs (no background networking: its closed network refuses it), and a static file
// server for a built web app.
import { createReadStream, statSync } from "node:fs";
import http from "node:http";
import path from "node:path";
import { type Browser, chromium } from "playwright-core";
import { CHROMIUM_FLAGS } from "../../services/host/tools/browser-preview.ts";
import { freePort } from "./test-nats.ts";

export const CHROMIUM = "/usr/bin/chromium";

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_FLAGS,
  });
}

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
};

export interface StaticServer {
  origin: string;
  /** Every path requested, in order. */
  requests: string[];
  close(): Promise<void>;
}

/** Serves `dir` on 127.0.0.1 (index.html for `/`); `routes` answer exact paths first. */
export async function serveStatic(
  dir: string,
  routes: Record<string, { type: string; body: string }> = {},
  port?: number,
): Promise<StaticServer> {
  const requests: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    requests.push(url.pathname);
    const route = routes[url.pathname];
    if (route) {
      res.writeHead(200, { "content-type": route.type });
      res.end(route.body);
      return;
    }
    const file = path.join(dir, path.normalize(url.pathname === "/" ? "/index.html" : url.pathname));
    if (!file.startsWith(dir) || !statSync(file, { throwIfNoEntry: false })?.isFile()) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream" });
    createReadStream(file).pipe(res);
  });
  const p = port ?? (await freePort());
  await new Promise<void>((resolve) => server.listen(p, "127.0.0.1", () => resolve()));
  return {
    origin: `http://127.0.0.1:${p}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
