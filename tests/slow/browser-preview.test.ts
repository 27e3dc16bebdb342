// BrowserPreview and new_context over NATS against the real host, the test acting as the worker of
// a Plan session (both are read-only, allowed in both modes). The page is served by the test on the
// host's own non-loopback address as a listed origin; its script and image reach for other origins,
// which the host-side request routing blocks (the browser itself runs in the bubblewrap sandbox with
// no network). Workspace file:// pages render; file:// outside the workspace and unlisted URLs are
// refused; no call writes into the workspace; without its sandbox user the browser never starts
// (SANDBOX_UNAVAILABLE). As the attack: a person's service on the host's loopback is never read, by
// any loopback name, page, listed origin or redirect, in Agent and Plan.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MAX_BODY_BYTES, runBrowserPreview } from "../../services/host/tools/browser-preview.ts";
import { fetchListed, HostItselfError } from "../../services/host/tools/preview-fetch.ts";
import type { ToolExecuteResult, TurnAssignment } from "../../services/protocol/schemas.ts";
import { hostAddress, openStackDir, SANDBOX_USER, sandboxTurn } from "../support/sandbox.ts";
import { eventually } from "../support/stack.ts";
import { useStack } from "../support/stack-fixture.ts";
import { executeTool } from "../support/worker-double.ts";

const stack = useStack("browserpreview", { prepare: openStackDir, host: true });
let server: Server;
let origin = "";
const hits: string[] = [];

const PAGE = `<!doctype html><html><head><title>Listed Preview</title></head><body>
<h1>Hello from a listed origin</h1><p id="fetch">fetch pending</p>
<img id="img" src="https://images.example.net/cat.png" alt="">
<script>
fetch("https://example.com/").then(
  () => { document.getElementById("fetch").textContent = "fetch reached example.com"; },
  () => { document.getElementById("fetch").textContent = "fetch blocked"; });
</script></body></html>`;

beforeAll(async () => {
  server = createServer((req, res) => {
    hits.push(req.url ?? "");
    res.setHeader("content-type", "text/html; charset=utf-8");
    res.end(PAGE);
  });
  await new Promise<void>((resolve) => server.listen(0, hostAddress(), resolve));
  origin = `http://${hostAddress()}:${(server.address() as AddressInfo).port}`;
  // Previews first whose outcome is not the test's: a cold Chromium, started while the suite's
  // other long files start beside this one, can take longer than the tool's 20 s launch bound;
  // the cases below meet a warm one (its files read once, its caches made).
  const { ws, assignment } = await sandboxTurn(stack, "plan");
  writeFileSync(path.join(ws, "warm.html"), "<title>warm</title>");
  for (let i = 0; i < 2; i++) {
    const warm = await executeTool(
      stack,
      assignment,
      `warm-${i}`,
      "BrowserPreview",
      { url: `file://${ws}/warm.html` },
      {},
      TOOL_REPLY_MS,
    ).catch(() => null);
    if (warm && !warm.isError) break;
  }
}, 150_000);

afterAll(async () => {
  await new Promise((r) => server?.close(r));
});

// A preview is bounded by the tool itself (browser launch 20 s, page 15 s: browser-preview.ts). The
// worker double waits longer than that, as the real worker's tool client does, so a slow Chromium
// start on a loaded machine is the tool's own timeout, never a lost reply.
const TOOL_REPLY_MS = 45_000;
const TEST_MS = 120_000;
let calls = 0;
const call = (a: TurnAssignment, tool: string, args: Record<string, unknown>) =>
  executeTool(stack, a, `bp${++calls}`, tool, args, {}, TOOL_REPLY_MS);

const textOf = (r: ToolExecuteResult) => r.content.map((c) => ("text" in c ? c.text : "")).join("");

function listing(dir: string): string[] {
  return readdirSync(dir, { recursive: true }).map(String).sort();
}

describe("BrowserPreview", () => {
  it(
    "renders a listed origin's page in Plan, blocks every other origin, and writes only the scratch PNG",
    async () => {
      const { ws, projectId, assignment } = await sandboxTurn(stack, "plan");
      await stack.client("alice").call("projects.configure", { projectId, previewOrigins: [origin] });
      const before = listing(ws);
      const r = await call(assignment, "BrowserPreview", { url: `${origin}/`, waitMs: 300 });
      expect(r.isError, textOf(r)).toBe(false);
      expect(textOf(r)).toContain("Listed Preview");
      expect(textOf(r)).toContain("Hello from a listed origin");
      expect(textOf(r)).toContain("fetch blocked");
      const d = r.details as { title: string; url: string; screenshotPath: string; blocked: string[] };
      expect(d.title).toBe("Listed Preview");
      expect(d.url).toBe(`${origin}/`);
      expect(d.blocked).toEqual(
        expect.arrayContaining(["https://example.com/", "https://images.example.net/cat.png"]),
      );
      expect(hits).toEqual(["/"]);
      expect(d.screenshotPath.startsWith(path.join(stack.env.dataDir, "scratch", assignment.sessionId))).toBe(
        true,
      );
      expect(existsSync(d.screenshotPath)).toBe(true);
      expect(readFileSync(d.screenshotPath).subarray(1, 4).toString()).toBe("PNG");
      expect(listing(ws)).toEqual(before);
    },
    TEST_MS,
  );

  it(
    "renders a workspace file:// page with its relative assets, and refuses other URLs",
    async () => {
      const { ws, assignment } = await sandboxTurn(stack, "plan");
      mkdirSync(path.join(ws, "site"), { recursive: true });
      writeFileSync(path.join(ws, "site", "style.css"), "h1 { color: rgb(200, 0, 0); }");
      writeFileSync(
        path.join(ws, "site", "index.html"),
        `<html><head><title>Workspace Page</title><link rel="stylesheet" href="style.css"></head>
<body><h1>From the workspace</h1><p id="c"></p><img src="http://images.example.net/x.png">
<script>addEventListener("load", () => { document.getElementById("c").textContent =
"color " + getComputedStyle(document.querySelector("h1")).color; });</script></body></html>`,
      );
      writeFileSync(path.join(ws, ".env"), "SECRET=1");
      const ok = await call(assignment, "BrowserPreview", { url: `file://${ws}/site/index.html` });
      expect(ok.isError, textOf(ok)).toBe(false);
      expect(textOf(ok)).toContain("Workspace Page");
      expect(textOf(ok)).toContain("From the workspace");
      expect(textOf(ok)).toContain("color rgb(200, 0, 0)");
      expect((ok.details as { blocked: string[] }).blocked).toContain("http://images.example.net/x.png");

      const outside = await call(assignment, "BrowserPreview", { url: "file:///etc/passwd" });
      expect(outside).toMatchObject({ isError: true, code: "PATH_OUTSIDE_WORKSPACE" });
      const dotdot = await call(assignment, "BrowserPreview", { url: `file://${ws}/../../etc/hostname` });
      expect(dotdot).toMatchObject({ isError: true, code: "PATH_OUTSIDE_WORKSPACE" });
      const denied = await call(assignment, "BrowserPreview", { url: `file://${ws}/.env` });
      expect(denied).toMatchObject({ isError: true, code: "WORKSPACE_PATH_DENIED" });
      for (const url of [
        "https://example.com/",
        "http://10.0.0.1/",
        "ftp://127.0.0.1/",
        "data:text/html,x",
      ]) {
        const r = await call(assignment, "BrowserPreview", { url });
        expect(r, url).toMatchObject({ isError: true, code: "BROWSER_URL_NOT_ALLOWED" });
      }
      const badWait = await call(assignment, "BrowserPreview", { url: "http://127.0.0.1/", waitMs: 10_001 });
      expect(badWait).toMatchObject({ isError: true, code: "INVALID_PARAMS" });
    },
    TEST_MS,
  );

  it(
    "loads the origins the project lists (exact origin), and nothing else",
    async () => {
      // The host's own non-loopback address stands in for an origin elsewhere (the machine has no
      // other network to serve one from); unlisted, it is refused like any other.
      const listedHits: string[] = [];
      const otherHits: string[] = [];
      let otherOrigin = "";
      const listed = createServer((req, res) => {
        listedHits.push(req.url ?? "");
        if (req.url === "/pixel.svg") {
          res.setHeader("content-type", "image/svg+xml");
          return res.end('<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>');
        }
        res.setHeader("content-type", "text/html; charset=utf-8");
        res.end(`<!doctype html><html><head><title>Listed Origin</title></head><body><h1>listed</h1>
<p id="img">img pending</p><p id="other">other pending</p>
<img src="/pixel.svg" onload="document.getElementById('img').textContent='img loaded'">
<script>fetch(${JSON.stringify(`${otherOrigin}/`)}).then(() => { document.getElementById("other").textContent = "other reached"; },
  () => { document.getElementById("other").textContent = "other blocked"; });</script></body></html>`);
      });
      const other = createServer((req, res) => {
        otherHits.push(req.url ?? "");
        res.end("other");
      });
      await new Promise<void>((resolve) => listed.listen(0, hostAddress(), resolve));
      await new Promise<void>((resolve) => other.listen(0, hostAddress(), resolve));
      try {
        const listedOrigin = `http://${hostAddress()}:${(listed.address() as AddressInfo).port}`;
        otherOrigin = `http://${hostAddress()}:${(other.address() as AddressInfo).port}`;
        const page = `${listedOrigin}/`;
        const { projectId, assignment } = await sandboxTurn(stack, "plan");
        const before = await call(assignment, "BrowserPreview", { url: page });
        expect(before).toMatchObject({ isError: true, code: "BROWSER_URL_NOT_ALLOWED" });
        expect(listedHits).toEqual([]);

        await stack.client("alice").call("projects.configure", {
          projectId,
          previewOrigins: [`${listedOrigin}/`],
        });
        const r = await call(assignment, "BrowserPreview", { url: page, waitMs: 300 });
        expect(r.isError, textOf(r)).toBe(false);
        expect(textOf(r)).toContain("Listed Origin");
        expect(textOf(r)).toContain("img loaded");
        expect(textOf(r)).toContain("other blocked");
        expect(listedHits).toEqual(["/", "/pixel.svg"]);
        expect(otherHits).toEqual([]);
        expect((r.details as { blocked: string[] }).blocked).toContain(`${otherOrigin}/`);
        const direct = await call(assignment, "BrowserPreview", { url: `${otherOrigin}/` });
        expect(direct).toMatchObject({ isError: true, code: "BROWSER_URL_NOT_ALLOWED" });
      } finally {
        await new Promise((r) => listed.close(r));
        await new Promise((r) => other.close(r));
      }
    },
    TEST_MS,
  );

  it(
    "reads a fetched response only up to the cap and drops the connection",
    async () => {
      let sent = 0;
      let closed = false;
      const chunk = Buffer.alloc(256 * 1024, 97);
      const endless = createServer((req, res) => {
        if (req.url !== "/huge") {
          res.setHeader("content-type", "text/html; charset=utf-8");
          // The page's load event waits for the script, so the call returns after the cut response.
          return res.end(`<!doctype html><title>Endless</title><p>endless</p><script src="/huge"></script>`);
        }
        res.on("close", () => {
          closed = true;
        });
        const pump = () => {
          while (!closed && sent < 1024 * 1024 * 1024) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once("drain", pump);
          }
        };
        pump();
      });
      await new Promise<void>((resolve) => endless.listen(0, hostAddress(), resolve));
      try {
        const url = `http://${hostAddress()}:${(endless.address() as AddressInfo).port}/`;
        // Called directly with a 1 MiB cap: the same code path, without pushing 10 MiB through the
        // browser's debugging pipe on a busy 2-core machine.
        const cap = 1024 * 1024;
        const r = await runBrowserPreview(
          { url },
          {
            workspace: stack.dir,
            readWorkspaceFile: async () => {
              throw new Error("no workspace files here");
            },
            settings: { user: SANDBOX_USER, dataDir: stack.env.dataDir },
            allowedOrigins: [new URL(url).origin],
            maxBodyBytes: cap,
          },
        );
        expect(r.isError, textOf(r)).toBe(false);
        expect(r.details).toMatchObject({ title: "Endless", served: 2, truncated: [`${url}huge`] });
        await eventually(async () => closed, 5000, "the host dropped the endless response");
        expect(sent).toBeLessThan(cap * 16);
        expect(MAX_BODY_BYTES).toBe(10 * 1024 * 1024);
      } finally {
        endless.closeAllConnections();
        await new Promise((r) => endless.close(r));
      }
    },
    TEST_MS,
  );

  it("is SANDBOX_UNAVAILABLE, never unconfined, without its sandbox user", async () => {
    const r = await runBrowserPreview(
      { url: `${origin}/` },
      {
        workspace: stack.dir,
        readWorkspaceFile: async (p) => ({ rel: p, bytes: Buffer.alloc(0) }),
        settings: { user: "pihost-no-such-user", dataDir: stack.env.dataDir },
        allowedOrigins: [origin],
      },
    );
    expect(r).toMatchObject({ isError: true, code: "SANDBOX_UNAVAILABLE" });
  });
});

/** A person's service on the host's loopback (a dashboard, an admin API): every request recorded. */
async function personsService(
  host: string,
  secret: string,
): Promise<{ server: Server; port: number; hits: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(req.url ?? "");
    res.setHeader("content-type", "text/html; charset=utf-8");
    res.setHeader("access-control-allow-origin", "*");
    res.end(`<!doctype html><title>${secret}</title><p>${secret}</p>`);
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  return { server, port: (server.address() as AddressInfo).port, hits: seen };
}

describe("BrowserPreview never reads the host's loopback", () => {
  it("a person's loopback service: no URL, page, listed origin or redirect of an agent's preview reaches it", async () => {
    const secret = `dashboard-secret-${Math.random().toString(36).slice(2, 10)}`;
    const v4 = await personsService("127.0.0.1", secret);
    const v6 = await personsService("::1", secret);
    // A listed origin elsewhere (the host's own non-loopback address) whose pages reach for loopback.
    const elsewhere = createServer((req, res) => {
      if (req.url === "/redirect") {
        res.statusCode = 302;
        res.setHeader("location", `http://127.0.0.1:${v4.port}/`);
        return res.end();
      }
      res.setHeader("content-type", "text/html; charset=utf-8");
      res.end(`<!doctype html><title>Elsewhere</title><p id="r">pending</p>
<iframe src="http://localhost:${v4.port}/frame"></iframe><img src="http://127.0.0.1:${v4.port}/img">
<script>fetch("http://127.0.0.1:${v4.port}/fetch").then((r) => r.text()).then(
  (t) => { document.getElementById("r").textContent = "read " + t; },
  () => { document.getElementById("r").textContent = "loopback unreachable"; });</script>`);
    });
    await new Promise<void>((resolve) => elsewhere.listen(0, hostAddress(), resolve));
    const listed = `http://${hostAddress()}:${(elsewhere.address() as AddressInfo).port}`;
    try {
      for (const mode of ["agent", "plan"] as const) {
        const { ws, projectId, assignment } = await sandboxTurn(stack, mode);
        writeFileSync(
          path.join(ws, "probe.html"),
          `<!doctype html><title>Probe</title><p id="r">pending</p>
<iframe src="http://[::1]:${v6.port}/frame"></iframe>
<script>fetch("http://localhost:${v4.port}/fetch").then((r) => r.text()).then(
  (t) => { document.getElementById("r").textContent = "read " + t; },
  () => { document.getElementById("r").textContent = "loopback unreachable"; });</script>`,
        );
        // The person's own loopback origin listed too: loopback stays the sandbox's own.
        await stack.client("alice").call("projects.configure", {
          projectId,
          previewOrigins: [listed, `http://127.0.0.1:${v4.port}`],
        });
        const urls = [
          `http://127.0.0.1:${v4.port}/`,
          `http://localhost:${v4.port}/`,
          `http://[::1]:${v6.port}/`,
          `http://127.1:${v4.port}/`,
          `http://0.0.0.0:${v4.port}/`,
          `http://app.localhost:${v4.port}/`,
          `file://${ws}/probe.html`,
          `${listed}/`,
          `${listed}/redirect`,
        ];
        for (const url of urls) {
          const r = await call(assignment, "BrowserPreview", { url, waitMs: 300 });
          const shown = JSON.stringify(r);
          expect({ mode, url, leaked: shown.includes(secret) }).toEqual({ mode, url, leaked: false });
          // Loopback pages do not load (the sandbox's loopback is empty); the others load and see none.
          const loads = url.startsWith("file:") || url === `${listed}/`;
          expect({ mode, url, code: r.code ?? null }).toEqual({
            mode,
            url,
            code: loads ? null : "TOOL_FAILED",
          });
          if (loads) expect(textOf(r)).toContain("loopback unreachable");
          else if (url.endsWith("/redirect")) expect(textOf(r)).toContain("ERR_CONNECTION_REFUSED");
          else expect(textOf(r)).toMatch(/ERR_CONNECTION_REFUSED.*the browser sandbox's own/);
          const shot = (r.details as { screenshotPath?: string } | undefined)?.screenshotPath;
          if (shot) expect(readFileSync(shot).includes(Buffer.from(secret))).toBe(false);
        }
        expect({ mode, v4: v4.hits, v6: v6.hits }).toEqual({ mode, v4: [], v6: [] });
      }
      // A listed name that resolves to loopback is not fetched by the host either (checked at connect).
      await expect(fetchListed(`http://localhost:${v4.port}/`, "GET", {}, 1024, 5000)).rejects.toBeInstanceOf(
        HostItselfError,
      );
      expect(v4.hits).toEqual([]);
    } finally {
      for (const srv of [v4.server, v6.server, elsewhere]) {
        srv.closeAllConnections();
        await new Promise((r) => srv.close(r));
      }
    }
  }, 120_000);
});

describe("new_context", () => {
  it("answers in Plan that the context was compacted and writes nothing", async () => {
    const { ws, assignment } = await sandboxTurn(stack, "plan");
    const offered = assignment.tools.map((t) => t.name);
    expect(offered).toEqual(expect.arrayContaining(["BrowserPreview", "new_context"]));
    const before = listing(ws);
    const r = await call(assignment, "new_context", { summary: "we looked at the page" });
    expect(r.isError).toBe(false);
    expect(textOf(r)).toContain("compacted");
    expect(listing(ws)).toEqual(before);
  });
});
