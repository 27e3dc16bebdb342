// The web console's side of `npm start`: a spawned nats-server gets a WebSocket on loopback only that
// refuses any origin but the console's; a NATS from the probe without PI_WEB_WS_URL leaves the
// console off with a line saying why; Vite's dev server serves services/web once it exists.
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { resolveNats } from "../../services/start/infra.ts";
import type { ResolvedNats } from "../../services/start/nats.ts";
import {
  consoleSocket,
  startWebConsole,
  WEB_CONFIG_FILE,
  webOrigins,
} from "../../services/start/web-console.ts";
import { reapAll, spawnTs } from "../support/processes.ts";
import { captureLog, dataDirs } from "../support/start.ts";
import { useLeakCheck } from "../support/stack-fixture.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-db.ts";
import { freePort, NATS_URL, uniquePrefix } from "../support/test-nats.ts";

useLeakCheck("start-console");
const started: ResolvedNats[] = [];
const databases: TestDatabase[] = [];

const { dataDir, removeAll: removeDataDirs } = dataDirs();

afterAll(async () => {
  await reapAll();
  for (const db of databases) await db.drop();
  for (const s of started) await s.stop();
  removeDataDirs();
});

/**
 * A raw WebSocket upgrade request to wsUrl with this Origin: the HTTP status (101 accepted) and, when
 * accepted, the first bytes the server sent on the socket.
 */
function handshake(
  wsUrl: string,
  origin: string,
  host = new URL(wsUrl).hostname,
): Promise<{ status: number; first: string }> {
  const u = new URL(wsUrl);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host,
      port: Number(u.port),
      path: "/",
      headers: {
        Connection: "Upgrade",
        Upgrade: "websocket",
        "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": randomBytes(16).toString("base64"),
        Origin: origin,
      },
    });
    req.setTimeout(5_000, () => req.destroy(new Error("handshake timed out")));
    req.once("upgrade", (res, socket, head) => {
      let first = head.toString("latin1");
      const done = () => {
        socket.destroy();
        resolve({ status: res.statusCode ?? 0, first });
      };
      if (first.includes("INFO")) return done();
      socket.on("data", (c: Buffer) => {
        first += c.toString("latin1");
        if (first.includes("INFO")) done();
      });
      socket.setTimeout(5_000, done);
    });
    req.once("response", (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, first: "" });
    });
    req.once("error", reject);
    req.end();
  });
}

function tcpRefused(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port, timeout: 2_000 });
    s.once("connect", () => {
      s.destroy();
      resolve(false);
    });
    s.once("timeout", () => {
      s.destroy();
      resolve(true); // nothing answered: not reachable there either
    });
    s.once("error", () => resolve(true));
  });
}

/** A non-loopback IPv4 address of this machine, if it has one. */
const outsideAddress = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && !a.internal && a.family === "IPv4")?.address;

async function spawnWithConsole(webPort: number) {
  const dir = dataDir("natsws");
  const { log, find } = captureLog();
  const nats = await resolveNats({
    probeUrl: `nats://127.0.0.1:${await freePort()}`,
    dataDir: dir,
    log,
    webOrigins: webOrigins(webPort),
  });
  started.push(nats);
  return { nats, dir, find, log };
}

describe("spawned nats-server's WebSocket for the console", () => {
  it("listens on 127.0.0.1 only and accepts only the console's origins", async () => {
    const webPort = await freePort();
    const { nats, dir, find } = await spawnWithConsole(webPort);
    expect(nats.source).toBe("spawned");
    expect(nats.wsUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+$/);
    const wsUrl = nats.wsUrl as string;
    expect(find("infra.nats")[0]).toMatchObject({ wsUrl, allowedOrigins: webOrigins(webPort) });

    const conf = readFileSync(path.join(dir, "nats.conf"), "utf8");
    expect(conf).toContain(`listen: "127.0.0.1:${new URL(wsUrl).port}"`);
    expect(conf).not.toMatch(/0\.0\.0\.0|::/);

    for (const origin of webOrigins(webPort)) {
      const ok = await handshake(wsUrl, origin);
      expect(ok.status, origin).toBe(101);
      expect(ok.first).toContain("INFO"); // a NATS protocol greeting over the WebSocket
    }
    for (const origin of [
      "http://evil.example",
      `http://127.0.0.1:${webPort + 1}`,
      `https://localhost:${webPort}`,
    ]) {
      expect((await handshake(wsUrl, origin)).status, origin).toBe(403);
    }
  });

  it.skipIf(!outsideAddress)("cannot be reached on the machine's other addresses", async () => {
    const { nats } = await spawnWithConsole(await freePort());
    const port = Number(new URL(nats.wsUrl as string).port);
    expect(await tcpRefused(outsideAddress as string, port)).toBe(true);
    expect(await tcpRefused("127.0.0.1", port)).toBe(false);
  });

  it("has no WebSocket without console origins", async () => {
    const dir = dataDir("natsnows");
    const { log } = captureLog();
    const nats = await resolveNats({ probeUrl: `nats://127.0.0.1:${await freePort()}`, dataDir: dir, log });
    started.push(nats);
    expect(nats.wsUrl).toBeUndefined();
    expect(readFileSync(path.join(dir, "nats.conf"), "utf8")).not.toContain("websocket");
  });
});

describe("console with a NATS npm start did not spawn", () => {
  it("with a probed NATS and no PI_WEB_WS_URL: off, and the log line says why and what to set", async () => {
    const { log, find, events } = captureLog();
    const nats = await resolveNats({
      probeUrl: NATS_URL,
      dataDir: dataDir("probe"),
      log,
      webOrigins: webOrigins(5173),
    });
    expect(nats.source).toBe("probe");
    expect(consoleSocket({ nats, envWsUrl: undefined, webPort: 5173, log })).toEqual({ on: false });
    const off = find("infra.web_off");
    expect(off).toHaveLength(1);
    expect(off[0]).toMatchObject({ level: "warn", console: "off", natsSource: "probe" });
    expect(String(off[0]?.reason)).toMatch(/probe URL.*cannot know its WebSocket URL/);
    expect(String(off[0]?.fix)).toMatch(/set PI_WEB_WS_URL/);
    expect(String(off[0]?.fix)).toContain("http://127.0.0.1:5173 and http://localhost:5173");
    expect(events.filter((e) => e.event === "infra.web")).toHaveLength(0);
  });

  it("with a probed NATS and PI_WEB_WS_URL: uses it", async () => {
    const { log } = captureLog();
    const nats = await resolveNats({ probeUrl: NATS_URL, dataDir: dataDir("probe2"), log });
    expect(consoleSocket({ nats, envWsUrl: "ws://127.0.0.1:8081", webPort: 5173, log })).toEqual({
      on: true,
      wsUrl: "ws://127.0.0.1:8081",
      from: "PI_WEB_WS_URL",
    });
  });
});

const viteConfigMissing = !existsSync(WEB_CONFIG_FILE);
if (viteConfigMissing) {
  console.warn(
    `start-console: ${WEB_CONFIG_FILE} does not exist yet, so the Vite dev-server test is skipped (it runs once services/web has its vite.config.ts)`,
  );
}

describe("Vite's dev server for the console", () => {
  // A stand-in configuration (no imports, so it loads from a temporary folder): proves the port, the
  // environment the config reads, the removed exit handlers and the stop, whatever services/web holds.
  it("serves a stand-in configuration on 127.0.0.1 with PI_WEB_WS_URL and PI_WEB_PREFIX set, and stops", async () => {
    const root = dataDir("vite");
    writeFileSync(
      path.join(root, "index.html"),
      "<!doctype html><html><head><title>t</title></head><body></body></html>",
    );
    const configFile = path.join(root, "vite.config.mjs");
    writeFileSync(
      configFile,
      [
        `export default { root: ${JSON.stringify(root)}, plugins: [{ name: "env", transformIndexHtml: (h) =>`,
        `  h.replace("<head>", '<head><meta name=ws content="' + process.env.PI_WEB_WS_URL + '">' +`,
        `    '<meta name=prefix content="' + process.env.PI_WEB_PREFIX + '">') }] };`,
      ].join("\n"),
    );
    const webPort = await freePort();
    const { log, find } = captureLog();
    const sigterm = process.listenerCount("SIGTERM");
    const web = await startWebConsole({
      port: webPort,
      wsUrl: "ws://127.0.0.1:1234",
      prefix: "tstand",
      log,
      configFile,
    });
    try {
      expect(process.listenerCount("SIGTERM")).toBe(sigterm);
      expect(find("infra.web")[0]).toMatchObject({
        url: `http://127.0.0.1:${webPort}/`,
        wsUrl: "ws://127.0.0.1:1234",
      });
      const html = await (await fetch(web.url)).text();
      expect(html).toContain('<meta name=ws content="ws://127.0.0.1:1234">');
      expect(html).toContain('<meta name=prefix content="tstand">');
    } finally {
      await web.stop();
    }
    expect(await tcpRefused("127.0.0.1", webPort)).toBe(true);
    expect(find("infra.web_stopped")).toHaveLength(1);
  });

  it("refuses a port that is taken (strictPort: the NATS origins name that port)", async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, "127.0.0.1", r));
    const port = (blocker.address() as net.AddressInfo).port;
    const root = dataDir("vitebusy");
    const configFile = path.join(root, "vite.config.mjs");
    writeFileSync(configFile, `export default { root: ${JSON.stringify(root)} };\n`);
    const { log } = captureLog();
    try {
      await expect(
        startWebConsole({ port, wsUrl: "ws://127.0.0.1:1", prefix: "p", log, configFile }),
      ).rejects.toThrow(new RegExp(String(port)));
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it.skipIf(viteConfigMissing)(
    "serves services/web on 127.0.0.1 with the WebSocket URL in the page, and stops",
    async () => {
      const webPort = await freePort();
      const { nats } = await spawnWithConsole(webPort);
      const { log, find } = captureLog();
      const sigterm = process.listenerCount("SIGTERM");
      const web = await startWebConsole({ port: webPort, wsUrl: nats.wsUrl as string, prefix: "tweb", log });
      try {
        expect(process.listenerCount("SIGTERM")).toBe(sigterm); // Vite's process.exit handler is gone
        expect(web.url).toBe(`http://127.0.0.1:${webPort}/`);
        expect(find("infra.web")[0]).toMatchObject({ url: web.url, wsUrl: nats.wsUrl, prefix: "tweb" });
        const res = await fetch(web.url);
        expect(res.status).toBe(200);
        const html = await res.text();
        expect(html).toContain("Content-Security-Policy");
        expect(html).toContain(nats.wsUrl as string);
        // The page's origin is one the spawned NATS lets in.
        expect((await handshake(nats.wsUrl as string, new URL(web.url).origin)).status).toBe(101);
      } finally {
        await web.stop();
      }
      expect(await tcpRefused("127.0.0.1", webPort)).toBe(true);
    },
    60_000,
  );
});

/** `npm start` as a child process on its own database and data folder, with extra settings. */
async function npmStart(label: string, env: Record<string, string | undefined>) {
  const db = await createTestDatabase(label);
  databases.push(db);
  return spawnTs("services/start/main.ts", {
    DATABASE_URL: db.url,
    PI_DATA_DIR: dataDir(label),
    PI_PREFIX: uniquePrefix(label),
    ...env,
  });
}

describe("npm start", () => {
  it("with NATS from NATS_URL and no PI_WEB_WS_URL: starts without the console and says why", async () => {
    const start = await npmStart("startnows", { NATS_URL });
    const off = await start.waitForEvent("infra.web_off", 60_000);
    expect(off).toMatchObject({ level: "warn", console: "off" });
    // Before services/web has its config the missing file is the reason, after it the NATS source.
    expect(String(off.reason)).toMatch(viteConfigMissing ? /vite\.config\.ts is missing/ : /NATS_URL/);
    const ready = await start.waitForEvent("start.ready", 120_000);
    expect(ready).toMatchObject({ nats: "env", webUrl: null });
    expect(start.lines.filter((l) => l.includes('"event":"infra.web"'))).toEqual([]);
    await start.stop(30_000);
    expect(await start.exited).toBe(0);
  }, 180_000);

  it.skipIf(viteConfigMissing)(
    "spawning its own NATS: serves the console, whose origin that NATS lets in, and stops it",
    async () => {
      const webPort = await freePort();
      const start = await npmStart("startws", {
        NATS_URL: undefined,
        PI_NATS_PROBE_URL: `nats://127.0.0.1:${await freePort()}`,
        PI_WEB_PORT: String(webPort),
      });
      const nats = (await start.waitForEvent("infra.nats", 60_000)) as { wsUrl: string; source: string };
      expect(nats.source).toBe("spawned");
      const web = (await start.waitForEvent("infra.web", 60_000)) as { url: string; wsUrl: string };
      expect(web).toMatchObject({ url: `http://127.0.0.1:${webPort}/`, wsUrl: nats.wsUrl });
      const ready = await start.waitForEvent("start.ready", 120_000);
      expect(ready.webUrl).toBe(web.url);
      expect((await fetch(web.url)).status).toBe(200);
      for (const origin of webOrigins(webPort))
        expect((await handshake(nats.wsUrl, origin)).status).toBe(101);
      expect((await handshake(nats.wsUrl, "http://evil.example")).status).toBe(403);
      await start.stop(30_000);
      expect(await start.exited).toBe(0);
      await start.waitForEvent("infra.web_stopped", 1_000);
      expect(await tcpRefused("127.0.0.1", webPort)).toBe(true);
    },
    180_000,
  );
});
