// The host's HTTP listener (issue #17 clauses 1, 2) against a real host on PI_HTTP_LISTEN: /healthz
// answers while the process runs; /readyz is 200 only while the database answers, NATS is up and the
// host is not draining (503 naming what is not ready); /metrics is Prometheus text (parsed strictly
// here) whose counters move with a known workload, labels free of ids; a BrowserPreview page cannot
// reach the listener, by loopback name or by an other host's recorded address.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { formatListenAddress, parseListenAddress } from "../services/host/http-listener.ts";
import { methodLabel, toolLabel } from "../services/host/metrics.ts";
import { reachesListener, runBrowserPreview } from "../services/host/tools/browser-preview.ts";
import type { ToolExecuteResult } from "../services/protocol/schemas.ts";
import { approveProposal, exitPlanStep, newPlanSession, submitted } from "./support/plans.ts";
import { openStackDir, SANDBOX_USER, sandboxTurn } from "./support/sandbox.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { ADMIN_URL } from "./support/test-db.ts";
import { freePort } from "./support/test-nats.ts";
import { executeTool, promptAndClaim, refusalCode } from "./support/worker-double.ts";

const port = await freePort();
/** A listener named in PI_HTTP_BLOCK (another pi-host process this host knows of). */
const blocked = `127.0.0.1:${await freePort()}`;
const listen = `127.0.0.1:${port}`;
const base = `http://${listen}`;
// The worker double's turns must not lose their lease while the test runs.
const stack = useStack("hosthttp", {
  prepare: openStackDir,
  host: true,
  extra: { PI_HTTP_LISTEN: listen, PI_HTTP_BLOCK: blocked, PI_TURN_LEASE_MS: "600000" },
});

let admin: pg.Client;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: ADMIN_URL });
  admin.on("error", () => {});
  await admin.connect();
});
afterAll(async () => {
  await admin?.query(`ALTER DATABASE "${stack.db.name}" WITH ALLOW_CONNECTIONS true`).catch(() => {});
  await admin?.end();
});

async function get(route: string): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(`${base}${route}`, { signal: AbortSignal.timeout(5_000) });
  return { status: res.status, type: res.headers.get("content-type") ?? "", text: await res.text() };
}

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/**
 * A strict parser of the Prometheus text format (0.0.4): every line is a HELP or TYPE comment or a
 * sample `name{label="value",...} number`; every sample belongs to a family with a TYPE; anything
 * else throws.
 */
function parsePrometheus(text: string): { types: Map<string, string>; samples: Sample[] } {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  const NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*";
  const sampleRe = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
  const labelRe = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\["\\n])*)"(?:,|$)/;
  if (!text.endsWith("\n")) throw new Error("the exposition must end with a newline");
  for (const line of text.slice(0, -1).split("\n")) {
    if (line === "") continue;
    const comment = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (comment) {
      if (!new RegExp(`^${NAME}$`).test(comment[2]!)) throw new Error(`bad metric name: ${line}`);
      if (comment[1] === "TYPE") {
        if (!/^(counter|gauge|histogram|summary|untyped)$/.test(comment[3]!))
          throw new Error(`bad type: ${line}`);
        types.set(comment[2]!, comment[3]!);
      }
      continue;
    }
    if (line.startsWith("#")) throw new Error(`unknown comment: ${line}`);
    const m = sampleRe.exec(line);
    if (!m) throw new Error(`not a sample: ${line}`);
    const labels: Record<string, string> = {};
    let rest = m[2] ?? "";
    while (rest !== "") {
      const l = labelRe.exec(rest);
      if (!l) throw new Error(`bad labels: ${line}`);
      labels[l[1]!] = l[2]!.replace(/\\n/g, "\n").replace(/\\(["\\])/g, "$1");
      rest = rest.slice(l[0].length);
    }
    const raw = m[3]!;
    const value = raw === "+Inf" ? Infinity : raw === "-Inf" ? -Infinity : raw === "NaN" ? NaN : Number(raw);
    if (Number.isNaN(value) && raw !== "NaN") throw new Error(`bad value: ${line}`);
    const family = m[1]!.replace(/_(bucket|sum|count)$/, "");
    if (!types.has(m[1]!) && !types.has(family)) throw new Error(`sample without a TYPE: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { types, samples };
}

async function scrape() {
  const r = await get("/metrics");
  expect(r.status).toBe(200);
  expect(r.type).toContain("text/plain");
  return parsePrometheus(r.text);
}

/** The sum of a metric's samples whose labels include `match`. */
function total(samples: Sample[], name: string, match: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}

const textOf = (r: ToolExecuteResult) => r.content.map((c) => ("text" in c ? c.text : "")).join("");

describe("listener addresses and labels", () => {
  it("parses PI_HTTP_LISTEN strictly and matches preview URLs to listeners", () => {
    expect(parseListenAddress("127.0.0.1:9464")).toEqual({ host: "127.0.0.1", port: 9464 });
    expect(formatListenAddress(parseListenAddress("[::1]:80"))).toBe("[::1]:80");
    for (const bad of ["9464", "127.0.0.1", "host:99999", "a b:1", "[::1", "http://x:1"])
      expect(() => parseListenAddress(bad), bad).toThrow(/PI_HTTP_LISTEN/);
    const cases: Array<[string, string[], boolean]> = [
      ["http://127.0.0.1:9464/metrics", ["127.0.0.1:9464"], true],
      ["http://localhost:9464/", ["127.0.0.1:9464"], true],
      ["http://[::1]:9464/", ["0.0.0.0:9464"], true],
      ["https://127.0.0.1:9464/", ["[::]:9464"], true],
      ["http://127.0.0.1:9465/", ["127.0.0.1:9464"], false],
      ["http://10.0.0.5:9464/", ["127.0.0.1:9464"], false],
      ["http://10.0.0.5:9464/", ["10.0.0.5:9464"], true],
      ["http://10.0.0.5/", ["10.0.0.5:80"], true],
      ["http://127.0.0.1:9464/", ["10.0.0.5:9464"], false],
      ["file:///tmp/x", ["127.0.0.1:9464"], false],
    ];
    for (const [url, listeners, blocked] of cases)
      expect(reachesListener(new URL(url), listeners), `${url} ${listeners}`).toBe(blocked);
  });

  it("labels only known methods and tool names", () => {
    expect(methodLabel("tools.execute")).toBe("tools.execute");
    expect(methodLabel("sess_123.whatever")).toBe("unknown");
    expect(toolLabel("Write", false)).toBe("Write");
    expect(toolLabel("my_plugin_tool", true)).toBe("plugin");
    expect(toolLabel("InventedByTheModel", false)).toBe("unknown");
  });
});

describe("the host's HTTP listener", () => {
  it("answers /healthz, /readyz ready, and nothing else", async () => {
    expect(await get("/healthz")).toMatchObject({ status: 200, text: "ok\n" });
    const ready = await get("/readyz");
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ ready: true });
    expect((await get("/nope")).status).toBe(404);
    const post = await fetch(`${base}/healthz`, { method: "POST" });
    expect(post.status).toBe(405);
    await post.text();
    // The listener is written into the host's row, so other hosts' previews block it.
    const row = await stack.db.pool.query("SELECT info FROM hosts");
    expect(row.rows.map((r) => r.info.http)).toContain(listen);
  });

  it("exposes Prometheus text whose counters move with a known workload, without ids in labels", async () => {
    const before = await scrape();
    expect(before.types.get("pihost_requests_total")).toBe("counter");
    expect(before.types.get("pihost_leases_owned")).toBe("gauge");
    expect(before.types.get("pihost_request_duration_seconds")).toBe("histogram");
    expect(total(before.samples, "pihost_fences_total")).toBe(1);

    // A Plan session: N Write calls are denied by policy, one invented tool is denied too.
    const alice = stack.client("alice");
    const project = await alice.call("projects.create", {
      name: "metrics",
      workspaceRoot: stack.newWorkspace(`metrics-${Date.now()}`),
    });
    const session = await alice.call("session.create", {
      projectId: project.id,
      mode: "plan",
      permissionMode: "auto",
    });
    const a = await promptAndClaim(stack, session.id);
    const N = 5;
    for (let i = 0; i < N; i++) {
      const r = await executeTool(stack, a, `w${i}`, "Write", { path: "x.txt", content: "x" });
      expect(r.isError).toBe(true);
    }
    const invented = await executeTool(stack, a, "inv", "MadeUpTool", {});
    expect(invented.isError).toBe(true);
    // Bob may not read alice's session: a FORBIDDEN reply, counted by code.
    expect(await refusalCode(stack.client("bob").call("session.get", { sessionId: session.id }))).toBe(
      "FORBIDDEN",
    );

    const after = await scrape();
    const delta = (name: string, match: Record<string, string>) =>
      total(after.samples, name, match) - total(before.samples, name, match);
    expect(delta("pihost_requests_total", { method: "tools.execute" })).toBe(N + 1);
    expect(delta("pihost_replies_total", { method: "tools.execute", code: "ok" })).toBe(N + 1);
    expect(delta("pihost_replies_total", { method: "session.get", code: "FORBIDDEN" })).toBe(1);
    expect(delta("pihost_requests_total", { method: "claim" })).toBe(1);
    expect(delta("pihost_tool_decisions_total", { tool: "Write", decision: "deny" })).toBe(N);
    expect(delta("pihost_tool_decisions_total", { tool: "unknown", decision: "deny" })).toBe(1);
    expect(delta("pihost_request_duration_seconds_count", { method: "tools.execute" })).toBe(N + 1);
    expect(delta("pihost_request_duration_seconds_count", { method: "claim" })).toBe(1);
    // The session's lease is this host's.
    expect(total(after.samples, "pihost_leases_owned")).toBeGreaterThanOrEqual(1);

    // No label value is an id of a session, turn, project, principal or tool call.
    const ids = [session.id, a.turnId, project.id, "alice", "bob", "w0", "inv", "MadeUpTool"];
    for (const s of after.samples)
      for (const v of Object.values(s.labels))
        expect(
          ids.some((id) => v.includes(id)),
          v,
        ).toBe(false);
  });

  it("counts approvals by outcome and times plans.resolve", async () => {
    const before = await scrape();
    const worker = await stack.startWorker();
    try {
      const plan = await newPlanSession(stack, `metrics-plan-${Date.now()}`, [exitPlanStep("Count")]);
      const events = stack.events(plan.session.id);
      await stack.client("alice").call("session.prompt", { sessionId: plan.session.id, text: "plan it" });
      const proposal = await submitted(events);
      // Bob is no approver of alice's session: refused, counted by its code.
      expect(await refusalCode(approveProposal(stack, proposal, "auto", "bob"))).toBe("FORBIDDEN");
      await approveProposal(stack, proposal, "auto");
      events.stop();
    } finally {
      await worker.stop();
    }
    const after = await scrape();
    const delta = (name: string, match: Record<string, string>) =>
      total(after.samples, name, match) - total(before.samples, name, match);
    expect(delta("pihost_approvals_total", { outcome: "approve" })).toBe(1);
    expect(delta("pihost_approvals_total", { outcome: "FORBIDDEN" })).toBe(1);
    expect(delta("pihost_request_duration_seconds_count", { method: "plans.resolve" })).toBe(2);
  }, 60_000);

  it("counts an actor restart", async () => {
    const project = await stack.client("alice").call("projects.create", {
      name: "restart",
      workspaceRoot: stack.newWorkspace(`restart-${Date.now()}`),
    });
    const session = await stack
      .client("alice")
      .call("session.create", { projectId: project.id, mode: "plan" });
    await stack.client("alice").call("session.get", { sessionId: session.id });
    const before = total((await scrape()).samples, "pihost_actor_restarts_total");
    const r = await stack.hook<{ failures: number; degraded: boolean }>("actor.fault", {
      sessionId: session.id,
    });
    expect(r).toMatchObject({ failures: 1, degraded: false });
    await eventually(
      async () => total((await scrape()).samples, "pihost_actor_restarts_total") === before + 1,
      5_000,
    );
  });

  it("is not ready while the database is unreachable, and ready again after", async () => {
    const name = stack.db.name;
    await admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS false`);
    try {
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name LIKE 'pi-host%'`,
        [name],
      );
      await eventually(
        async () => {
          const r = await get("/readyz");
          return r.status === 503 && JSON.parse(r.text).notReady.includes("database") ? r : null;
        },
        10_000,
        "/readyz says the database is not ready",
      );
      // The process is up all along.
      expect((await get("/healthz")).status).toBe(200);
    } finally {
      await admin.query(`ALTER DATABASE "${name}" WITH ALLOW_CONNECTIONS true`);
    }
    await eventually(async () => (await get("/readyz")).status === 200, 10_000, "/readyz ready again");
  });

  it("is out of reach of a BrowserPreview page, by any loopback name and by recorded address", async () => {
    const settings = { user: SANDBOX_USER, dataDir: stack.env.dataDir };
    const ctx = (listeners: string[]) => ({
      workspace: stack.dir,
      readWorkspaceFile: async () => {
        throw new Error("no workspace files here");
      },
      settings,
      blockedListeners: async () => listeners,
    });
    // Navigating to the listener is refused before the browser starts.
    for (const url of [`${base}/metrics`, `http://localhost:${port}/metrics`, `http://[::1]:${port}/`])
      await expect(runBrowserPreview({ url }, ctx([listen]))).rejects.toMatchObject({
        code: "BROWSER_URL_NOT_ALLOWED",
      });
    // A page that fetches /metrics (a workspace file: loopback pages are the browser sandbox's own):
    // the request is blocked host-side, the page learns nothing.
    const probe = `<!doctype html><title>Probe</title><p id="r">pending</p><script>
fetch("http://localhost:${port}/metrics").then((r) => r.text()).then(
  (t) => { document.getElementById("r").textContent = "read " + t.length; },
  () => { document.getElementById("r").textContent = "metrics blocked"; });
</script>`;
    // The blocked list as the host builds it: its own listener comes from its row here.
    const row = await stack.db.pool.query("SELECT info->>'http' AS http FROM hosts");
    const r = await runBrowserPreview(
      { url: `file://${stack.dir}/probe.html`, waitMs: 500 },
      {
        ...ctx(row.rows.map((x) => x.http)),
        readWorkspaceFile: async () => ({ rel: "probe.html", bytes: Buffer.from(probe) }),
      },
    );
    expect(r.isError, textOf(r)).toBe(false);
    expect(textOf(r)).toContain("metrics blocked");
    expect((r.details as { blocked: string[] }).blocked).toContain(`http://localhost:${port}/metrics`);
  }, 60_000);

  it("is out of reach of a preview run by the host: its own listener, PI_HTTP_BLOCK's and other hosts' rows", async () => {
    // Another host's listener, as its fence records it (a stopped row: nobody takes it over).
    const other = `127.0.0.1:${await freePort()}`;
    await stack.db.pool.query(
      `INSERT INTO hosts (id, incarnation, started_at, heartbeat_at, lease_expires_at, info, heartbeat, state)
       VALUES ('other-host', 1, now(), now(), now(), $1, 1, 'stopped')`,
      [JSON.stringify({ http: other })],
    );
    const { assignment } = await sandboxTurn(stack, "plan");
    let n = 0;
    for (const url of [
      `${base}/metrics`,
      `http://localhost:${port}/readyz`,
      `http://${other}/metrics`,
      `http://${blocked}/`,
    ]) {
      const r = await executeTool(stack, assignment, `bp${++n}`, "BrowserPreview", { url });
      expect(r, url).toMatchObject({ isError: true, code: "BROWSER_URL_NOT_ALLOWED" });
      expect(textOf(r)).toContain("health and metrics listener");
    }
  }, 60_000);

  it("is not ready while draining (SIGTERM), and healthy until the process leaves", async () => {
    // A tool call in flight keeps the drain open for its grace (3 s): a Bash call waiting for a person.
    const { assignment } = await sandboxTurn(stack, "agent", "ask");
    const events = stack.events(assignment.sessionId);
    const inFlight = executeTool(stack, assignment, "b1", "Bash", { command: "true" }).catch(
      (e: { code?: string }) => e.code,
    );
    await events.waitFor((e) => e.type === "permission.requested");
    expect((await get("/readyz")).status).toBe(200);
    const host = stack.host!;
    host.child.kill("SIGTERM");
    const draining = await eventually(
      async () => {
        const r = await get("/readyz");
        return r.status === 503 ? JSON.parse(r.text) : null;
      },
      2_500,
      "/readyz 503 during the drain",
    );
    expect(draining.notReady).toContain("draining");
    expect((await get("/healthz")).status).toBe(200);
    expect(await inFlight).toBe("HOST_SHUTTING_DOWN");
    expect(await host.exited).toBe(0);
    // Stopped: the listener is closed with the process.
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
    events.stop();
  }, 30_000);
});
