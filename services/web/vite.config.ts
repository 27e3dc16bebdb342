// Builds the web console (services/web -> services/web/dist) and serves it in development. Reads
// PI_WEB_WS_URL and PI_WEB_PREFIX at build/serve time: the page gets them as a constant, and the
// Content Security Policy injected into every page names the WebSocket URL as its only connection.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";
import { contentSecurityPolicy, readWebSettings } from "./web-settings.ts";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../..");

function cspPlugin(csp: string): Plugin {
  return {
    name: "pi-web-csp",
    transformIndexHtml: {
      order: "post",
      handler: () => [
        {
          tag: "meta",
          attrs: { "http-equiv": "Content-Security-Policy", content: csp },
          injectTo: "head-prepend",
        },
      ],
    },
  };
}

export default defineConfig(() => {
  const settings = readWebSettings(process.env);
  // The machines page (every diagram in docs/machines) is a second entry when it exists.
  const pages = ["index.html", "machines.html"].filter((p) => existsSync(path.join(here, p)));
  return {
    root: here,
    base: "./",
    // Nothing from the environment reaches the page but these two values.
    envPrefix: [],
    define: { __PI_WEB_CONFIG__: JSON.stringify(settings) },
    plugins: [cspPlugin(contentSecurityPolicy(settings.wsUrl))],
    server: {
      // The CSP allows no connection but the NATS WebSocket: no hot reload socket in development.
      hmr: false,
      fs: { allow: [repoRoot] },
    },
    build: {
      outDir: path.join(here, "dist"),
      emptyOutDir: true,
      // The modulepreload polyfill would be an inline script, which the CSP refuses.
      modulePreload: { polyfill: false },
      assetsInlineLimit: 0,
      rolldownOptions: {
        input: Object.fromEntries(pages.map((p) => [path.basename(p, ".html"), path.join(here, p)])),
      },
      reportCompressedSize: false,
      // elkjs's bundled layout engine (the machine diagrams) is about 1.5 MB on its own.
      chunkSizeWarningLimit: 2048,
    },
    logLevel: "warn" as const,
  };
});
