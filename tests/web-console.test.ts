// The web console in a real browser (Debian's Chromium through playwright-core) against a real
// production-mode host, agent worker and a nats-server running the generated authenticated
// configuration with its WebSocket listener: a person sees a plan arrive, reads it, reloads (the card
// comes back with the same deadline), approves with accept-edits and watches the execution, with the
// diagram highlighting exactly the host's machine.state at each step. A second person's own NATS
// connection gets nothing of it; hostile content runs nothing and fetches nothing; a tampered plan
// shows the mismatch and the host refuses it; a page of another origin cannot open the WebSocket.
// Screenshots of each step go to test-artifacts/web-console/.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { decodeJson } from "../services/protocol/envelope.ts";
import { rpcClient } from "../services/protocol/rpc-client.ts";
import type { SessionView } from "../services/protocol/schemas.ts";
import type { ScriptStep } from "../services/protocol/values.ts";
import { launchChromium, type StaticServer, serveStatic } from "./support/browser.ts";
import { REPO_ROOT } from "./support/processes.ts";
import { eventually } from "./support/stack.ts";
import { useStack } from "./support/stack-fixture.ts";
import { startTeamStack, type TeamStack } from "./support/team-stack.ts";
import { freePort } from "./support/test-nats.ts";
import { refusalCode } from "./support/worker-double.ts";

const stack = useStack("webui");
const SHOTS = path.join(REPO_ROOT, "test-artifacts", "web-console");

let team: TeamStack;
let web: StaticServer;
let trap: StaticServer;
let browser: Browser;
let aliceNc: NatsConnection;
let bobNc: NatsConnection;
const bobGot: string[] = [];
const subs: Subscription[] = [];

const rpc = (nc: NatsConnection, principal: string) => rpcClient({ nc, prefix: stack.env.prefix, principal });

beforeAll(async () => {
  mkdirSync(SHOTS, { recursive: true });
  const webPort = await freePort();
  const origin = `http://127.0.0.1:${webPort}`;
  team = await startTeamStack(stack, { people: ["alice", "bob"], websocketOrigins: [origin] });
  // The console as production builds it: for this WebSocket URL and prefix, served statically.
  const out = path.join(stack.dir, "web-dist");
  const build = spawnSync(
    process.execPath,
    [
      path.join(REPO_ROOT, "node_modules/vite/bin/vite.js"),
      "build",
      "--config",
      "services/web/vite.config.ts",
      "--outDir",
      out,
      "--emptyOutDir",
    ],
    {
      cwd: REPO_ROOT,
      encoding: "utf8",
      env: { ...process.env, PI_WEB_WS_URL: team.wsUrl!, PI_WEB_PREFIX: stack.env.prefix },
      timeout: 120_000,
    },
  );
  if (build.status !== 0) throw new Error(`vite build failed:\n${build.stdout}\n${build.stderr}`);
  web = await serveStatic(out, {}, webPort);
  // Another origin: where the hostile plan's remote image points, and a page that tries the socket.
  trap = await serveStatic(stack.dir, {
    "/evil.html": {
      type: "text/html",
      body: `<!doctype html><script>
        const ws = new WebSocket(${JSON.stringify(team.wsUrl)});
        ws.onopen = () => { document.title = "open"; };
        ws.onerror = () => { document.title = "refused"; };
      </script>`,
    },
  });
  browser = await launchChromium();
  aliceNc = await team.as("alice");
  bobNc = await team.as("bob");
  // bob watches everything his own subjects carry for the whole file.
  for (const subject of [`${stack.env.prefix}.evt.bob.>`, `${stack.env.prefix}.live.bob.>`])
    subs.push(bobNc.subscribe(subject, { callback: (_e, m) => void bobGot.push(m.subject) }));
}, 180_000);

afterAll(async () => {
  for (const s of subs) s.unsubscribe();
  await browser?.close();
  await web?.close();
  await trap?.close();
  await team?.stop();
});

/** alice's Plan session on a fresh workspace under her own folder (production grants). */
async function planSession(
  title: string,
  script: ScriptStep[],
): Promise<{ ws: string; session: SessionView }> {
  const alice = rpc(aliceNc, "alice");
  const ws = stack.newWorkspace(`alice/${title.replace(/\W+/g, "-").toLowerCase()}`);
  const project = await alice.call("projects.create", { name: title, workspaceRoot: ws });
  const session = await alice.call("session.create", {
    projectId: project.id,
    title,
    mode: "plan",
    permissionMode: "auto",
    model: { provider: "scripted", model: "script", script },
  });
  return { ws, session };
}

/** The host's machine.state values of one session, as alice's own connection receives them. */
function machineStates(sessionId: string): string[] {
  const got: string[] = [];
  subs.push(
    aliceNc.subscribe(`${stack.env.prefix}.evt.alice.${sessionId}.machine.state`, {
      callback: (_e, m) => void got.push((decodeJson(m.data) as { state: string }).state),
    }),
  );
  return got;
}

async function signIn(page: Page): Promise<void> {
  await page.goto(web.origin);
  await page.getByLabel("NATS user").fill("alice");
  await page.getByLabel("Password").fill(team.secrets.users.alice!);
  await page.getByRole("button", { name: "Connect" }).click();
  await page
    .getByRole("status")
    .filter({ hasText: /^Connected$/ })
    .first()
    .waitFor({ timeout: 20_000 });
}

/**
 * Records every state the diagram highlights (window.__shown), starting with the current one: from
 * the mutation records themselves, so a state highlighted and replaced within one task still counts.
 */
async function recordHighlights(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __shown: string[] };
    w.__shown = [];
    const push = (state: string | null | undefined) => {
      if (state && w.__shown.at(-1) !== state) w.__shown.push(state);
    };
    push(document.querySelector('[data-state][aria-current="true"]')?.getAttribute("data-state"));
    new MutationObserver((records) => {
      for (const r of records)
        if (r.attributeName === "aria-current" && r.oldValue !== "true")
          push((r.target as Element).getAttribute("data-state"));
    }).observe(document.body, {
      subtree: true,
      attributes: true,
      attributeFilter: ["aria-current"],
      attributeOldValue: true,
    });
  });
}

const highlighted = (page: Page) =>
  page.evaluate(
    () => document.querySelector('[data-state][aria-current="true"]')?.getAttribute("data-state") ?? null,
  );
const shown = (page: Page) => page.evaluate(() => (window as unknown as { __shown: string[] }).__shown);

/** Waits until the host's last machine.state is `state` and the page highlights exactly it. */
async function atState(page: Page, host: string[], state: string): Promise<void> {
  await eventually(
    async () => host.at(-1) === state && (await highlighted(page)) === state,
    30_000,
    `host and page at ${state} (host: ${host.join(",")}; page: ${await highlighted(page)})`,
  );
}

function isSubsequence(needle: string[], hay: string[]): boolean {
  let i = 0;
  for (const x of hay) if (x === needle[i]) i++;
  return i === needle.length;
}

describe("the web console in Chromium", () => {
  it("a plan arrives, is read and reloaded, approved with accept-edits, and its execution watched; the diagram follows the host", async () => {
    const trapImage = `${trap.origin}/remote.png`;
    const markdown = [
      "# Greeting plan",
      "",
      "1. Write GREETING.md.",
      "",
      `![tracker](${trapImage})`,
      "",
      "<!-- approve without reading: this comment is hidden -->",
      "",
      '<script>window.__pwned = "plan script"</script>',
      "",
      "Say \u202Eolleh\u202C politely.",
      "",
    ].join("\n");
    const { session } = await planSession("Greeting", [
      { toolCalls: [{ name: "Bash", args: { command: `echo '<img src=x onerror="window.__pwned=1">'` } }] },
      {
        text: '<script>window.__pwned = "transcript"</script> I looked around.',
        toolCalls: [
          {
            name: "ExitPlanMode",
            args: {
              title: 'Greeting <img src=x onerror="window.__pwned=3">',
              markdown,
              question: "Write it?",
            },
          },
        ],
      },
      { toolCalls: [{ name: "Write", args: { path: "GREETING.md", content: "hello\n" } }] },
      { text: "Done." },
    ]);
    const host = machineStates(session.id);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    await signIn(page);
    await page.getByRole("button", { name: "Open session Greeting" }).click();
    await page.locator("[data-state]").first().waitFor();
    await recordHighlights(page);
    // Before any request the session may have no live actor: the host says so, the page marks nothing.
    const initial = (await rpc(aliceNc, "alice").call("session.get", { sessionId: session.id })).machineState;
    await eventually(
      async () => (await highlighted(page)) === (initial === "passivated" ? null : initial) || undefined,
      10_000,
      `the page at the host's ${initial}`,
    );

    await page.getByRole("textbox", { name: "Prompt", exact: true }).fill("Add a greeting");
    await page.getByRole("button", { name: "Send prompt" }).click();
    const card = page.locator("article.approval-card").first();
    await card.getByRole("button", { name: "Approve" }).waitFor({ timeout: 30_000 });
    await atState(page, host, "parked");
    const [proposal] = (
      await rpc(aliceNc, "alice").call("plans.pending", {
        sessionId: session.id,
      })
    ).proposals;
    await expect.poll(() => card.locator("time").getAttribute("datetime")).toBe(proposal!.deadline);
    await expect.poll(() => card.getByText("Hidden or removed content").count()).toBe(1);
    await page.screenshot({ path: path.join(SHOTS, "1-plan-awaiting-approval.png"), fullPage: true });
    // While the approval is pending the card's controls are the session's only enabled ones.
    expect(await page.getByRole("button", { name: "Send prompt" }).isDisabled()).toBe(true);
    await card.getByRole("button", { name: "Show raw Markdown" }).click();
    await expect
      .poll(() => card.getByLabel("Plan Markdown as written").textContent())
      .toContain("this comment is hidden");
    const flags = (await card.locator(".plan-flags").textContent()) ?? "";
    expect(flags).toMatch(/comment/i);
    expect(flags).toContain("U+202E");
    await page.screenshot({ path: path.join(SHOTS, "2-raw-view-flags.png"), fullPage: true });
    const before = await shown(page);

    // A reload restores the pending card with the same deadline (credentials were in memory only).
    await page.reload();
    await page.getByLabel("NATS user").waitFor();
    expect(await page.evaluate(() => [localStorage.length, sessionStorage.length, document.cookie])).toEqual([
      0,
      0,
      "",
    ]);
    await page.getByLabel("NATS user").fill("alice");
    await page.getByLabel("Password").fill(team.secrets.users.alice!);
    await page.getByRole("button", { name: "Connect" }).click();
    await page.getByRole("button", { name: "Open session Greeting" }).click();
    const card2 = page.locator("article.approval-card").first();
    await card2.getByRole("button", { name: "Approve" }).waitFor({ timeout: 30_000 });
    expect(await card2.locator("time").getAttribute("datetime")).toBe(proposal!.deadline);
    await recordHighlights(page);
    await atState(page, host, "parked");

    await card2.getByLabel(/^Accept edits/).check();
    await card2.getByRole("button", { name: "Approve" }).click();
    await atState(page, host, "idle");
    await expect
      .poll(() => page.getByLabel("Transcript").textContent(), { timeout: 30_000 })
      .toContain("Done.");
    await page.screenshot({ path: path.join(SHOTS, "3-execution-done.png"), fullPage: true });
    const after = await shown(page);

    // What the page highlighted, in order, walks the machine's own path.
    const all = [...before, ...after];
    expect(
      isSubsequence(["idle", "running", "parked", "queued", "running", "idle"], all),
      all.join(" -> "),
    ).toBe(true);
    expect(isSubsequence(["idle", "running", "parked", "queued", "running", "idle"], host)).toBe(true);
    const approved = await rpc(aliceNc, "alice").call("plans.get", {
      proposalId: proposal!.proposalId,
    });
    expect(approved).toMatchObject({
      status: "approved",
      targetPermissionMode: "accept-edits",
      executionState: "completed",
    });

    // Hostile content ran nothing and fetched nothing; it is on the page as text.
    expect(await page.evaluate(() => (window as unknown as { __pwned?: unknown }).__pwned)).toBeUndefined();
    expect(requests.filter((u) => u.startsWith(trap.origin))).toEqual([]);
    expect(trap.requests).toEqual([]);
    expect(await page.getByLabel("Transcript").textContent()).toContain(
      '<img src=x onerror="window.__pwned=1">',
    );
    expect(await page.locator("img[onerror], script:not([src])").count()).toBe(0);

    // bob's own NATS connection carried nothing of alice's session, and the bus refuses him.
    expect(bobGot.filter((s) => s.includes(session.id))).toEqual([]);
    const bob = rpc(bobNc, "bob");
    const since = await bob.call("events.since", { after: 0 });
    expect(since.events.filter((e) => e.sessionId === session.id)).toEqual([]);
    expect(await refusalCode(bob.call("artifacts.read", { proposalId: proposal!.proposalId }))).toBe(
      "FORBIDDEN",
    );
    expect(await refusalCode(bob.call("events.since", { sessionId: session.id }))).toBe("FORBIDDEN");
    await page.close();
  });

  it("a plan file changed on disk shows the mismatch loudly, Approve is off, and the host refuses it", async () => {
    const { ws, session } = await planSession("Tampered", [
      {
        toolCalls: [
          { name: "ExitPlanMode", args: { title: "Tampered", markdown: "# Safe plan\n", question: "Go?" } },
        ],
      },
    ]);
    const alice = rpc(aliceNc, "alice");
    await alice.call("session.prompt", { sessionId: session.id, text: "plan" });
    const proposal = await eventually(
      async () => (await alice.call("plans.pending", { sessionId: session.id })).proposals[0],
      30_000,
    );
    const file = path.join(ws, proposal.artifactPath);
    writeFileSync(file, `${readFileSync(file, "utf8")}\nrm -rf / # added later\n`);
    const page = await browser.newPage({ viewport: { width: 390, height: 900 } });
    await signIn(page);
    await page.getByRole("button", { name: "Open session Tampered" }).click();
    const card = page.locator("article.approval-card").first();
    const alert = card.getByRole("alert");
    await alert.waitFor({ timeout: 30_000 });
    expect(await alert.textContent()).toMatch(/no longer matches|does not match/i);
    expect(await card.getByRole("button", { name: "Approve" }).isDisabled()).toBe(true);
    expect(await card.getByRole("button", { name: "Reject" }).isEnabled()).toBe(true);
    // Narrow screen: nothing wider than the viewport.
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: path.join(SHOTS, "4-tampered-plan-narrow.png"), fullPage: true });
    const refused = alice.call("plans.resolve", {
      proposalId: proposal.proposalId,
      sessionId: proposal.sessionId,
      turnId: proposal.turnId,
      toolCallId: proposal.toolCallId,
      version: proposal.version,
      action: "approve",
      targetPermissionMode: "ask",
    });
    expect(await refusalCode(refused)).toBe("PLAN_ARTIFACT_HASH_MISMATCH");
    await page.close();
  });

  it("a page of another origin cannot open the WebSocket; the console's own page names only it in its CSP", async () => {
    const page = await browser.newPage();
    await page.goto(`${trap.origin}/evil.html`);
    await expect.poll(() => page.title(), { timeout: 10_000 }).toBe("refused");
    await page.goto(web.origin);
    const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute("content");
    expect(csp).toContain(`connect-src ${team.wsUrl}`);
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("img-src 'self' data:");
    await page.close();
  });
});
